// ge::Graph over the simulator IR, plus the IR helpers every library shares.
#include "graph/graph.h"

#include <sstream>

#include "common/graph_ir.h"
#include "common/sim_env.h"

namespace ge {

// A graph input (kind Data, index = its position) or an ONNX node.
class NodeImpl {
 public:
  std::shared_ptr<const gemesh::sim::IrGraph> ir;
  bool data{false};
  size_t index{0};
};

GNode::GNode() = default;

graphStatus GNode::GetType(AscendString &type) const {
  if (!impl_) return GRAPH_FAILED;
  type = AscendString(impl_->data ? "Data" : impl_->ir->nodes[impl_->index].op_type.c_str());
  return GRAPH_SUCCESS;
}

graphStatus GNode::GetName(AscendString &name) const {
  if (!impl_) return GRAPH_FAILED;
  const auto &ir = *impl_->ir;
  if (impl_->data && gemesh::sim::EnvString("GEMESH_SIM_DATA_NAMES", "onnx") == "generic") {
    // As a parser that names graph inputs by position would (see native/README.md).
    name = AscendString(("data_" + std::to_string(impl_->index)).c_str());
    return GRAPH_SUCCESS;
  }
  name = AscendString(impl_->data ? ir.values[ir.inputs[impl_->index]].name.c_str() : ir.nodes[impl_->index].name.c_str());
  return GRAPH_SUCCESS;
}

size_t GNode::GetInputsSize() const {
  if (!impl_) return 0;
  return impl_->data ? 0 : impl_->ir->nodes[impl_->index].inputs.size();
}

size_t GNode::GetOutputsSize() const {
  if (!impl_) return 0;
  return impl_->data ? 1 : impl_->ir->nodes[impl_->index].outputs.size();
}

graphStatus GNode::GetOutputDesc(const int32_t index, TensorDesc &tensor_desc) const {
  if (!impl_ || index < 0 || static_cast<size_t>(index) >= GetOutputsSize()) return GRAPH_FAILED;
  const auto &ir = *impl_->ir;
  const int v = impl_->data ? ir.inputs[impl_->index] : ir.nodes[impl_->index].outputs[index];
  if (v < 0) return GRAPH_FAILED;
  const auto &value = ir.values[v];
  tensor_desc = TensorDesc(Shape(value.has_rank ? value.dims : std::vector<int64_t>{}), FORMAT_ND, value.dtype);
  tensor_desc.SetName(value.name.c_str());
  return GRAPH_SUCCESS;
}

graphStatus GNode::GetAttr(const AscendString &name, int64_t &attr_value) const {
  if (!impl_) return GRAPH_FAILED;
  if (impl_->data) {
    if (name != "index") return GRAPH_FAILED;
    attr_value = static_cast<int64_t>(impl_->index);
    return GRAPH_SUCCESS;
  }
  const auto &attrs = impl_->ir->nodes[impl_->index].attrs;
  const auto it = attrs.find(name.GetString());
  if (it == attrs.end() || it->second.kind != gemesh::sim::IrAttr::Kind::kInt) return GRAPH_FAILED;
  attr_value = it->second.i;
  return GRAPH_SUCCESS;
}

std::vector<GNode> Graph::GetAllNodes() const {
  std::vector<GNode> out;
  if (!IsValid()) return out;
  auto add = [&](bool data, size_t index) {
    GNode n;
    auto impl = std::make_shared<NodeImpl>();
    impl->ir = impl_->ir;
    impl->data = data;
    impl->index = index;
    GraphUtils::Node(n) = impl;
    out.push_back(n);
  };
  for (size_t i = 0; i < impl_->ir->inputs.size(); ++i) add(true, i);
  for (size_t i = 0; i < impl_->ir->nodes.size(); ++i) add(false, i);
  return out;
}

std::vector<GNode> Graph::GetDirectNode() const { return GetAllNodes(); }

Graph::Graph(const char_t *name) : impl_(std::make_shared<GraphImpl>()) {
  impl_->name = name == nullptr ? "" : name;
}

bool Graph::IsValid() const { return impl_ != nullptr && impl_->ir != nullptr; }

graphStatus Graph::GetName(AscendString &name) const {
  if (impl_ == nullptr) return GRAPH_FAILED;
  name = AscendString(impl_->name.c_str());
  return GRAPH_SUCCESS;
}

graphStatus Graph::GetAllOpName(std::vector<AscendString> &names) const {
  if (!IsValid()) return GRAPH_FAILED;
  names.clear();
  for (const auto &n : impl_->ir->nodes) names.emplace_back(n.name.c_str());
  return GRAPH_SUCCESS;
}

graphStatus Graph::CopyFrom(const Graph &src_graph) {
  if (src_graph.impl_ == nullptr) return GRAPH_FAILED;
  impl_ = std::make_shared<GraphImpl>();
  impl_->name = src_graph.impl_->name;
  if (src_graph.impl_->ir) impl_->ir = std::make_shared<gemesh::sim::IrGraph>(*src_graph.impl_->ir);
  return GRAPH_SUCCESS;
}

int64_t GetSizeInBytes(int64_t element_count, DataType data_type) {
  const int size = GetSizeByDataType(data_type);
  if (size < 0 || element_count < 0) return -1;
  int64_t bytes = 0;
  if (__builtin_mul_overflow(element_count, static_cast<int64_t>(size), &bytes)) return -1;
  return bytes;
}

}  // namespace ge

namespace gemesh::sim {

std::string DimsToString(const std::vector<int64_t> &dims) {
  std::ostringstream os;
  os << '[';
  for (size_t i = 0; i < dims.size(); ++i) os << (i ? "," : "") << dims[i];
  os << ']';
  return os.str();
}

const char *DataTypeName(ge::DataType dt) {
  switch (dt) {
    case ge::DT_FLOAT: return "DT_FLOAT";
    case ge::DT_FLOAT16: return "DT_FLOAT16";
    case ge::DT_INT8: return "DT_INT8";
    case ge::DT_INT32: return "DT_INT32";
    case ge::DT_UINT8: return "DT_UINT8";
    case ge::DT_INT16: return "DT_INT16";
    case ge::DT_UINT16: return "DT_UINT16";
    case ge::DT_UINT32: return "DT_UINT32";
    case ge::DT_INT64: return "DT_INT64";
    case ge::DT_UINT64: return "DT_UINT64";
    case ge::DT_DOUBLE: return "DT_DOUBLE";
    case ge::DT_BOOL: return "DT_BOOL";
    case ge::DT_STRING: return "DT_STRING";
    case ge::DT_BF16: return "DT_BF16";
    default: return "DT_UNDEFINED";
  }
}

}  // namespace gemesh::sim
