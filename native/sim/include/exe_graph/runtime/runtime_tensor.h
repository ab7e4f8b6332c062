// CANN simulator: gert::Tensor, the runtime tensor ExecuteGraphWithStreamAsync
// takes. Move-only; the byte size is computed from the storage shape and dtype.
#ifndef GEMESH_SIM_EXE_GRAPH_RUNTIME_RUNTIME_TENSOR_H_
#define GEMESH_SIM_EXE_GRAPH_RUNTIME_RUNTIME_TENSOR_H_

#include <utility>

#include "exe_graph/runtime/storage_format.h"
#include "exe_graph/runtime/storage_shape.h"
#include "exe_graph/runtime/tensor_data.h"
#include "graph/types.h"

namespace gert {
class Tensor {
 public:
  Tensor() = default;
  Tensor(const StorageShape &storage_shape, const StorageFormat &storage_format, const TensorPlacement placement,
         const ge::DataType data_type, TensorAddress addr)
      : Tensor(storage_shape, storage_format, placement, data_type, addr, nullptr) {}
  Tensor(const StorageShape &storage_shape, const StorageFormat &storage_format, ge::DataType data_type)
      : storage_shape_(storage_shape), storage_format_(storage_format), data_type_(data_type) {}
  Tensor(const StorageShape &storage_shape, const StorageFormat &storage_format, const TensorPlacement placement,
         const ge::DataType data_type, TensorAddress addr, TensorAddrManager manager)
      : storage_shape_(storage_shape),
        storage_format_(storage_format),
        data_type_(data_type),
        tensor_data_(addr, manager, SizeOf(storage_shape.GetStorageShape().GetShapeSize(), data_type), placement) {}
  Tensor(Tensor &&) noexcept = default;
  Tensor &operator=(Tensor &&) noexcept = default;

  int64_t GetShapeSize() const { return storage_shape_.GetStorageShape().GetShapeSize(); }
  template <class T>
  const T *GetData() const {
    return static_cast<const T *>(GetAddr());
  }
  template <class T>
  T *GetData() {
    return static_cast<T *>(GetAddr());
  }
  void SetData(TensorData &&data) { tensor_data_ = std::move(data); }
  const void *GetAddr() const { return tensor_data_.GetAddr(); }
  void *GetAddr() { return tensor_data_.GetAddr(); }
  size_t GetSize() const { return tensor_data_.GetSize(); }
  void SetSize(const size_t size) { tensor_data_.SetSize(size); }
  ge::DataType GetDataType() const { return data_type_; }
  void SetDataType(const ge::DataType data_type) { data_type_ = data_type; }
  const Shape &GetStorageShape() const { return storage_shape_.GetStorageShape(); }
  Shape &MutableStorageShape() { return storage_shape_.MutableStorageShape(); }
  const Shape &GetOriginShape() const { return storage_shape_.GetOriginShape(); }
  Shape &MutableOriginShape() { return storage_shape_.MutableOriginShape(); }
  const StorageShape &GetShape() const { return storage_shape_; }
  StorageShape &GetShape() { return storage_shape_; }
  ge::Format GetStorageFormat() const { return storage_format_.GetStorageFormat(); }
  void SetStorageFormat(const ge::Format f) { storage_format_.SetStorageFormat(f); }
  ge::Format GetOriginFormat() const { return storage_format_.GetOriginFormat(); }
  void SetOriginFormat(const ge::Format f) { storage_format_.SetOriginFormat(f); }
  const StorageFormat &GetFormat() const { return storage_format_; }
  StorageFormat &MutableFormat() { return storage_format_; }
  TensorPlacement GetPlacement() const { return tensor_data_.GetPlacement(); }
  void SetPlacement(const TensorPlacement placement) { tensor_data_.SetPlacement(placement); }
  const TensorData &GetTensorData() const { return tensor_data_; }
  TensorData &MutableTensorData() { return tensor_data_; }

 private:
  static size_t SizeOf(int64_t elements, ge::DataType dt) {
    const int64_t bytes = ge::GetSizeInBytes(elements, dt);
    return bytes < 0 ? 0U : static_cast<size_t>(bytes);
  }

  StorageShape storage_shape_;
  StorageFormat storage_format_;
  ge::DataType data_type_{ge::DT_UNDEFINED};
  TensorData tensor_data_;
};
}  // namespace gert

#endif  // GEMESH_SIM_EXE_GRAPH_RUNTIME_RUNTIME_TENSOR_H_
