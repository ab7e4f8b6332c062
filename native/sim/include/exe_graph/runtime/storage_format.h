// CANN simulator: gert::StorageFormat, origin and storage formats of a runtime tensor.
#ifndef GEMESH_SIM_EXE_GRAPH_RUNTIME_STORAGE_FORMAT_H_
#define GEMESH_SIM_EXE_GRAPH_RUNTIME_STORAGE_FORMAT_H_

#include "exe_graph/runtime/expand_dims_type.h"
#include "graph/types.h"

namespace gert {
struct StorageFormat {
  StorageFormat() = default;
  StorageFormat(const ge::Format origin_format, const ge::Format storage_format, const ExpandDimsType &expand_dims_type)
      : origin_format_(origin_format), storage_format_(storage_format), expand_dims_type_(expand_dims_type) {}

  ge::Format GetOriginFormat() const { return origin_format_; }
  void SetOriginFormat(const ge::Format f) { origin_format_ = f; }
  ge::Format GetStorageFormat() const { return storage_format_; }
  void SetStorageFormat(const ge::Format f) { storage_format_ = f; }
  ExpandDimsType GetExpandDimsType() const { return expand_dims_type_; }
  void SetExpandDimsType(const ExpandDimsType &t) { expand_dims_type_ = t; }
  bool operator==(const StorageFormat &other) const {
    return origin_format_ == other.origin_format_ && storage_format_ == other.storage_format_ &&
           expand_dims_type_ == other.expand_dims_type_;
  }
  bool operator!=(const StorageFormat &other) const { return !(*this == other); }

 private:
  ge::Format origin_format_{ge::FORMAT_ND};
  ge::Format storage_format_{ge::FORMAT_ND};
  ExpandDimsType expand_dims_type_;
};
}  // namespace gert

#endif  // GEMESH_SIM_EXE_GRAPH_RUNTIME_STORAGE_FORMAT_H_
