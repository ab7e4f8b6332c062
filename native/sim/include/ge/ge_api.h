// CANN simulator: GE's v1 session API (the subset GE Mesh uses), with the
// signatures of CANN's ge/ge_api.h.
#ifndef GEMESH_SIM_GE_GE_API_H_
#define GEMESH_SIM_GE_GE_API_H_

#include <map>
#include <memory>
#include <vector>

#include "exe_graph/runtime/runtime_tensor.h"
#include "ge/ge_api_error_codes.h"
#include "ge/ge_api_types.h"
#include "ge/ge_graph_compile_summary.h"
#include "graph/ascend_string.h"
#include "graph/graph.h"
#include "graph/tensor.h"

namespace ge {
/// Process-wide init. A second call while initialised returns SUCCESS and ignores the new options.
GE_FUNC_VISIBILITY Status GEInitialize(const std::map<AscendString, AscendString> &options);
/// Releases everything GE holds; SUCCESS when GE is not initialised.
GE_FUNC_VISIBILITY Status GEFinalize();
/// Read-and-clear, per calling thread.
GE_FUNC_VISIBILITY ge::AscendString GEGetErrorMsgV2();
GE_FUNC_VISIBILITY ge::AscendString GEGetWarningMsgV2();

class GE_FUNC_VISIBILITY Session {
 public:
  /// Cannot report failure: a broken session fails from its first AddGraph.
  explicit Session(const std::map<AscendString, AscendString> &options);
  ~Session();

  Status AddGraph(uint32_t graph_id, const Graph &graph);
  Status AddGraph(uint32_t graph_id, const Graph &graph, const std::map<AscendString, AscendString> &options);
  Status AddGraphWithCopy(uint32_t graph_id, const Graph &graph);
  Status AddGraphWithCopy(uint32_t graph_id, const Graph &graph, const std::map<AscendString, AscendString> &options);
  Status RemoveGraph(uint32_t graph_id);
  Status CompileGraph(uint32_t graph_id);
  CompiledGraphSummaryPtr GetCompiledGraphSummary(uint32_t graph_id);
  /// Only for compiled graphs, once per graph.
  Status LoadGraph(const uint32_t graph_id, const std::map<AscendString, AscendString> &options, void *stream) const;
  /// Needs CompileGraph + LoadGraph; results are valid after aclrtSynchronizeStream(stream).
  Status ExecuteGraphWithStreamAsync(uint32_t graph_id, void *stream, const std::vector<gert::Tensor> &inputs,
                                     std::vector<gert::Tensor> &outputs);
  uint64_t GetSessionId() const;

 private:
  uint64_t sessionId_;
};
}  // namespace ge

#endif  // GEMESH_SIM_GE_GE_API_H_
