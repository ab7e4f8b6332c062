// ge::Shape, ge::TensorDesc and ge::Tensor: plain host-side value types.
#include "graph/tensor.h"

#include <cstring>

namespace ge {

class ShapeImpl {
 public:
  std::vector<int64_t> dims;
};

class TensorDescImpl {
 public:
  Shape shape;
  Format format{FORMAT_ND};
  DataType dtype{DT_FLOAT};
  std::string name;
  Placement placement{kPlacementHost};
};

class TensorImpl {
 public:
  TensorDesc desc;
  std::vector<uint8_t> owned;
  uint8_t *data{nullptr};
  size_t size{0};
  Tensor::DeleteFunc deleter;
  ~TensorImpl() {
    if (deleter && data != nullptr) deleter(data);
  }
};

Shape::Shape() : impl_(std::make_shared<ShapeImpl>()) {}
Shape::Shape(const std::vector<int64_t> &dims) : impl_(std::make_shared<ShapeImpl>()) { impl_->dims = dims; }
size_t Shape::GetDimNum() const { return impl_->dims.size(); }
int64_t Shape::GetDim(size_t idx) const { return idx < impl_->dims.size() ? impl_->dims[idx] : 0; }
graphStatus Shape::SetDim(size_t idx, int64_t value) {
  if (idx >= impl_->dims.size()) return GRAPH_FAILED;
  impl_->dims[idx] = value;
  return GRAPH_SUCCESS;
}
std::vector<int64_t> Shape::GetDims() const { return impl_->dims; }
int64_t Shape::GetShapeSize() const {
  if (impl_->dims.empty()) return 0;
  int64_t n = 1;
  for (const int64_t d : impl_->dims) {
    if (d < 0) return -1;
    n *= d;
  }
  return n;
}

TensorDesc::TensorDesc() : impl(std::make_shared<TensorDescImpl>()) {}
TensorDesc::TensorDesc(Shape shape, Format format, DataType dt) : impl(std::make_shared<TensorDescImpl>()) {
  impl->shape = shape;
  impl->format = format;
  impl->dtype = dt;
}
TensorDesc::TensorDesc(const TensorDesc &desc) : impl(std::make_shared<TensorDescImpl>(*desc.impl)) {}
TensorDesc::TensorDesc(TensorDesc &&desc) : impl(std::move(desc.impl)) {}
TensorDesc &TensorDesc::operator=(const TensorDesc &desc) {
  if (this != &desc) impl = std::make_shared<TensorDescImpl>(*desc.impl);
  return *this;
}
TensorDesc &TensorDesc::operator=(TensorDesc &&desc) {
  impl = std::move(desc.impl);
  return *this;
}
void TensorDesc::Update(const Shape &shape, Format format, DataType dt) {
  impl->shape = shape;
  impl->format = format;
  impl->dtype = dt;
}
Shape TensorDesc::GetShape() const { return impl->shape; }
void TensorDesc::SetShape(const Shape &shape) { impl->shape = shape; }
Format TensorDesc::GetFormat() const { return impl->format; }
void TensorDesc::SetFormat(Format format) { impl->format = format; }
DataType TensorDesc::GetDataType() const { return impl->dtype; }
void TensorDesc::SetDataType(DataType dt) { impl->dtype = dt; }
graphStatus TensorDesc::GetName(AscendString &name) const {
  name = AscendString(impl->name.c_str());
  return GRAPH_SUCCESS;
}
void TensorDesc::SetName(const char_t *name) { impl->name = name == nullptr ? "" : name; }
void TensorDesc::SetPlacement(Placement placement) { impl->placement = placement; }
Placement TensorDesc::GetPlacement() const { return impl->placement; }

Tensor::Tensor() : impl(std::make_shared<TensorImpl>()) {}
Tensor::Tensor(const TensorDesc &tensor_desc) : impl(std::make_shared<TensorImpl>()) { impl->desc = tensor_desc; }
Tensor::Tensor(const TensorDesc &tensor_desc, const std::vector<uint8_t> &data) : Tensor(tensor_desc) {
  (void)SetData(data);
}
Tensor::Tensor(const TensorDesc &tensor_desc, const uint8_t *data, size_t size) : Tensor(tensor_desc) {
  (void)SetData(data, size);
}
TensorDesc Tensor::GetTensorDesc() const { return impl->desc; }
graphStatus Tensor::SetTensorDesc(const TensorDesc &tensor_desc) {
  impl->desc = tensor_desc;
  return GRAPH_SUCCESS;
}
const uint8_t *Tensor::GetData() const { return impl->data; }
uint8_t *Tensor::GetData() { return impl->data; }
size_t Tensor::GetSize() const { return impl->size; }
graphStatus Tensor::SetData(const std::vector<uint8_t> &data) { return SetData(data.data(), data.size()); }
graphStatus Tensor::SetData(const uint8_t *data, size_t size) {
  auto next = std::make_shared<TensorImpl>();
  next->desc = impl->desc;
  next->owned.assign(data, data + size);
  next->data = next->owned.data();
  next->size = size;
  impl = next;
  return GRAPH_SUCCESS;
}
graphStatus Tensor::SetData(uint8_t *data, size_t size, const Tensor::DeleteFunc &deleter_func) {
  auto next = std::make_shared<TensorImpl>();
  next->desc = impl->desc;
  next->data = data;
  next->size = size;
  next->deleter = deleter_func;
  impl = next;
  return GRAPH_SUCCESS;
}

}  // namespace ge
