// CANN simulator: graph status codes and the visibility/deprecation macros the
// GE headers use. Declarations follow CANN's public graph/error_codes.h.
#ifndef GEMESH_SIM_GRAPH_ERROR_CODES_H_
#define GEMESH_SIM_GRAPH_ERROR_CODES_H_

#include <cstddef>
#include <cstdint>

#ifndef GE_FUNC_VISIBILITY
#define GE_FUNC_VISIBILITY __attribute__((visibility("default")))
#endif
#ifndef GE_FUNC_HOST_VISIBILITY
#define GE_FUNC_HOST_VISIBILITY __attribute__((visibility("default")))
#endif
#ifndef GE_FUNC_DEV_VISIBILITY
#define GE_FUNC_DEV_VISIBILITY
#endif
#ifndef ATTRIBUTED_DEPRECATED
#define ATTRIBUTED_DEPRECATED(replacement) __attribute__((deprecated("Please use " #replacement " instead.")))
#endif

namespace ge {
using graphStatus = uint32_t;
const graphStatus GRAPH_FAILED = 0xFFFFFFFF;
const graphStatus GRAPH_SUCCESS = 0;
const graphStatus GRAPH_PARAM_INVALID = 50331649;
}  // namespace ge

#endif  // GEMESH_SIM_GRAPH_ERROR_CODES_H_
