// The simulator's graph IR: what the ONNX parser produces and the runner
// compiles. A ge::Graph carries it through GraphImpl.
#ifndef GEMESH_SIM_COMMON_GRAPH_IR_H_
#define GEMESH_SIM_COMMON_GRAPH_IR_H_

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "graph/graph.h"
#include "graph/types.h"

namespace gemesh::sim {

/// A constant tensor in host memory, little-endian, dense.
struct IrTensor {
  ge::DataType dtype{ge::DT_UNDEFINED};
  std::vector<int64_t> dims;
  std::shared_ptr<const std::vector<uint8_t>> bytes;
};

struct IrAttr {
  enum class Kind { kInt, kFloat, kString, kInts, kFloats, kStrings, kTensor };
  Kind kind{Kind::kInt};
  int64_t i{0};
  float f{0.0f};
  std::string s;
  std::vector<int64_t> ints;
  std::vector<float> floats;
  std::vector<std::string> strings;
  std::shared_ptr<const IrTensor> t;
};

struct IrValue {
  std::string name;
  ge::DataType dtype{ge::DT_UNDEFINED};
  /// Dims as declared or inferred by the parser; -1 = unknown. Empty with has_rank = scalar.
  std::vector<int64_t> dims;
  bool has_rank{false};
  /// Set for initializers and Constant outputs.
  std::shared_ptr<const IrTensor> constant;
};

struct IrNode {
  std::string name;
  std::string op_type;
  std::string domain;
  /// Value indices; -1 marks an omitted optional input.
  std::vector<int> inputs;
  std::vector<int> outputs;
  std::map<std::string, IrAttr> attrs;
};

struct IrGraph {
  std::string name;
  /// Version of the default ONNX domain the model imports.
  int64_t opset{0};
  std::vector<IrValue> values;
  /// Topologically sorted.
  std::vector<IrNode> nodes;
  std::vector<int> inputs;
  std::vector<int> outputs;
};

/// Human-readable dims, e.g. [4,3,224,224].
std::string DimsToString(const std::vector<int64_t> &dims);
const char *DataTypeName(ge::DataType dt);

}  // namespace gemesh::sim

namespace ge {
class GraphImpl {
 public:
  std::string name;
  std::shared_ptr<gemesh::sim::IrGraph> ir;
};

/// The simulator's access to Graph internals (Graph declares GraphUtils a friend).
class GraphUtils {
 public:
  static GraphImplPtr &Impl(Graph &graph) { return graph.impl_; }
  static const GraphImplPtr &Impl(const Graph &graph) { return graph.impl_; }
  static std::shared_ptr<NodeImpl> &Node(GNode &node) { return node.impl_; }
  static const std::shared_ptr<NodeImpl> &Node(const GNode &node) { return node.impl_; }
};
}  // namespace ge

#endif  // GEMESH_SIM_COMMON_GRAPH_IR_H_
