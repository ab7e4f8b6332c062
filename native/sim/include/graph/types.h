// CANN simulator: data types and formats (numeric values as in CANN's
// graph/types.h, which the C ABI and gert::Tensor carry).
#ifndef GEMESH_SIM_GRAPH_TYPES_H_
#define GEMESH_SIM_GRAPH_TYPES_H_

#include <cstdint>

#include "graph/error_codes.h"

namespace ge {
using char_t = char;

enum DataType {
  DT_FLOAT = 0,
  DT_FLOAT16 = 1,
  DT_INT8 = 2,
  DT_INT32 = 3,
  DT_UINT8 = 4,
  DT_INT16 = 6,
  DT_UINT16 = 7,
  DT_UINT32 = 8,
  DT_INT64 = 9,
  DT_UINT64 = 10,
  DT_DOUBLE = 11,
  DT_BOOL = 12,
  DT_STRING = 13,
  DT_BF16 = 27,
  DT_UNDEFINED = 28,
  DT_MAX = 43,
};

enum Format {
  FORMAT_NCHW = 0,
  FORMAT_NHWC = 1,
  FORMAT_ND = 2,
  FORMAT_NC1HWC0 = 3,
  FORMAT_RESERVED = 40,
};

enum Placement {
  kPlacementHost = 0,
  kPlacementDevice = 1,
  kPlacementEnd,
};

/// Bytes of one element; -1 for types without a fixed size (strings) or unknown ones.
inline int GetSizeByDataType(DataType data_type) {
  switch (data_type) {
    case DT_FLOAT:
    case DT_INT32:
    case DT_UINT32:
      return 4;
    case DT_FLOAT16:
    case DT_INT16:
    case DT_UINT16:
    case DT_BF16:
      return 2;
    case DT_INT8:
    case DT_UINT8:
    case DT_BOOL:
      return 1;
    case DT_INT64:
    case DT_UINT64:
    case DT_DOUBLE:
      return 8;
    default:
      return -1;
  }
}

/// Bytes of element_count elements; -1 when the type has no fixed size or on overflow.
GE_FUNC_VISIBILITY int64_t GetSizeInBytes(int64_t element_count, DataType data_type);
}  // namespace ge

#endif  // GEMESH_SIM_GRAPH_TYPES_H_
