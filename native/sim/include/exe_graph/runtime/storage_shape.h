// CANN simulator: gert::StorageShape, the origin (logical) and storage (device layout) shapes.
#ifndef GEMESH_SIM_EXE_GRAPH_RUNTIME_STORAGE_SHAPE_H_
#define GEMESH_SIM_EXE_GRAPH_RUNTIME_STORAGE_SHAPE_H_

#include "exe_graph/runtime/shape.h"

namespace gert {
struct StorageShape {
  StorageShape() = default;
  StorageShape(const std::initializer_list<int64_t> &origin_shape, const std::initializer_list<int64_t> &storage_shape)
      : origin_shape_(origin_shape), storage_shape_(storage_shape) {}

  const Shape &GetOriginShape() const { return origin_shape_; }
  const Shape &GetShape() const { return origin_shape_; }
  const Shape &GetStorageShape() const { return storage_shape_; }
  Shape &MutableShape() { return origin_shape_; }
  Shape &MutableOriginShape() { return origin_shape_; }
  Shape &MutableStorageShape() { return storage_shape_; }
  bool operator==(const StorageShape &other) const {
    return origin_shape_ == other.origin_shape_ && storage_shape_ == other.storage_shape_;
  }
  bool operator!=(const StorageShape &other) const { return !(*this == other); }

 private:
  Shape origin_shape_;
  Shape storage_shape_;
};
}  // namespace gert

#endif  // GEMESH_SIM_EXE_GRAPH_RUNTIME_STORAGE_SHAPE_H_
