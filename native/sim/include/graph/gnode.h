// CANN simulator: ge::GNode, a node of a ge::Graph as the graph introspection
// API shows it. The simulator exposes graph inputs as "Data" nodes with an
// "index" attribute (their position), and every other node with its ONNX op type.
#ifndef GEMESH_SIM_GRAPH_GNODE_H_
#define GEMESH_SIM_GRAPH_GNODE_H_

#include <cstdint>
#include <memory>

#include "graph/ascend_string.h"
#include "graph/error_codes.h"
#include "graph/tensor.h"

namespace ge {
class NodeImpl;
class GE_FUNC_VISIBILITY GNode {
 public:
  GNode();
  ~GNode() = default;

  graphStatus GetType(AscendString &type) const;
  graphStatus GetName(AscendString &name) const;
  size_t GetInputsSize() const;
  size_t GetOutputsSize() const;
  graphStatus GetOutputDesc(const int32_t index, TensorDesc &tensor_desc) const;
  graphStatus GetAttr(const AscendString &name, int64_t &attr_value) const;

 private:
  std::shared_ptr<NodeImpl> impl_;
  friend class GraphUtils;
};
using GNodePtr = std::shared_ptr<GNode>;
}  // namespace ge

#endif  // GEMESH_SIM_GRAPH_GNODE_H_
