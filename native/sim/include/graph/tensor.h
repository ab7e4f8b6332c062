// CANN simulator: ge::Shape, ge::TensorDesc and ge::Tensor (host tensors of
// GE's v1 API; the stream API uses gert::Tensor instead).
#ifndef GEMESH_SIM_GRAPH_TENSOR_H_
#define GEMESH_SIM_GRAPH_TENSOR_H_

#include <functional>
#include <memory>
#include <vector>

#include "graph/ascend_string.h"
#include "graph/error_codes.h"
#include "graph/types.h"

namespace ge {
class ShapeImpl;
class GE_FUNC_VISIBILITY Shape {
 public:
  Shape();
  ~Shape() = default;
  explicit Shape(const std::vector<int64_t> &dims);

  size_t GetDimNum() const;
  int64_t GetDim(size_t idx) const;
  graphStatus SetDim(size_t idx, int64_t value);
  std::vector<int64_t> GetDims() const;
  /// Product of the dims; 0 for a shape without dims, -1 when a dim is unknown.
  int64_t GetShapeSize() const;

 private:
  std::shared_ptr<ShapeImpl> impl_;
};

class TensorDescImpl;
class GE_FUNC_VISIBILITY TensorDesc {
 public:
  TensorDesc();
  ~TensorDesc() = default;
  explicit TensorDesc(Shape shape, Format format = FORMAT_ND, DataType dt = DT_FLOAT);
  TensorDesc(const TensorDesc &desc);
  TensorDesc(TensorDesc &&desc);
  TensorDesc &operator=(const TensorDesc &desc);
  TensorDesc &operator=(TensorDesc &&desc);

  void Update(const Shape &shape, Format format = FORMAT_ND, DataType dt = DT_FLOAT);
  Shape GetShape() const;
  void SetShape(const Shape &shape);
  Format GetFormat() const;
  void SetFormat(Format format);
  DataType GetDataType() const;
  void SetDataType(DataType dt);
  graphStatus GetName(AscendString &name) const;
  void SetName(const char_t *name);
  void SetPlacement(Placement placement);
  Placement GetPlacement() const;

 private:
  std::shared_ptr<TensorDescImpl> impl;
};

class TensorImpl;
class GE_FUNC_VISIBILITY Tensor {
 public:
  using DeleteFunc = std::function<void(uint8_t *)>;
  Tensor();
  ~Tensor() = default;
  explicit Tensor(const TensorDesc &tensor_desc);
  Tensor(const TensorDesc &tensor_desc, const std::vector<uint8_t> &data);
  Tensor(const TensorDesc &tensor_desc, const uint8_t *data, size_t size);

  TensorDesc GetTensorDesc() const;
  graphStatus SetTensorDesc(const TensorDesc &tensor_desc);
  const uint8_t *GetData() const;
  uint8_t *GetData();
  size_t GetSize() const;
  graphStatus SetData(const std::vector<uint8_t> &data);
  graphStatus SetData(const uint8_t *data, size_t size);
  graphStatus SetData(uint8_t *data, size_t size, const Tensor::DeleteFunc &deleter_func);

 private:
  std::shared_ptr<TensorImpl> impl;
};
}  // namespace ge

#endif  // GEMESH_SIM_GRAPH_TENSOR_H_
