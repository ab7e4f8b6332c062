// CANN simulator: ge::Graph, the container aclgrphParseONNX fills and
// Session::AddGraph takes. The simulator's graph holds its own IR.
#ifndef GEMESH_SIM_GRAPH_GRAPH_H_
#define GEMESH_SIM_GRAPH_GRAPH_H_

#include <memory>
#include <string>
#include <vector>

#include "graph/ascend_string.h"
#include "graph/error_codes.h"
#include "graph/gnode.h"
#include "graph/tensor.h"
#include "graph/types.h"

namespace ge {
class GraphImpl;
using GraphImplPtr = std::shared_ptr<GraphImpl>;

class GE_FUNC_VISIBILITY Graph {
  friend class GraphUtils;

 public:
  explicit Graph(const char_t *name);
  Graph() = default;
  ~Graph() = default;

  bool IsValid() const;
  graphStatus GetName(AscendString &name) const;
  graphStatus GetAllOpName(std::vector<AscendString> &names) const;
  graphStatus CopyFrom(const Graph &src_graph);
  std::vector<GNode> GetAllNodes() const;
  std::vector<GNode> GetDirectNode() const;

 private:
  GraphImplPtr impl_{nullptr};
};
using GraphPtr = std::shared_ptr<Graph>;
}  // namespace ge

#endif  // GEMESH_SIM_GRAPH_GRAPH_H_
