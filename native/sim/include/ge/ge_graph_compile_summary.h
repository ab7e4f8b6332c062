// CANN simulator: what CompileGraph learned about a graph (memory sizes, output
// shapes and dtypes). The getters fail for graphs that are not static.
#ifndef GEMESH_SIM_GE_GE_GRAPH_COMPILE_SUMMARY_H_
#define GEMESH_SIM_GE_GE_GRAPH_COMPILE_SUMMARY_H_

#include <memory>
#include <utility>
#include <vector>

#include "ge/ge_api_types.h"
#include "graph/tensor.h"

namespace ge {
class GE_FUNC_VISIBILITY CompiledGraphSummary {
 public:
  class Builder;
  class SummaryData;
  ~CompiledGraphSummary();
  CompiledGraphSummary &operator=(const CompiledGraphSummary &) & = delete;
  CompiledGraphSummary(const CompiledGraphSummary &) = delete;

  bool IsStatic() const;
  Status GetConstMemorySize(size_t &size) const;
  Status GetFeatureMemorySize(size_t &size) const;
  Status GetFixedFeatureMemorySize(size_t &size) const;
  Status GetRefreshableFeatureMemorySize(size_t &size) const;
  Status GetFeatureMemoryBaseRefreshable(bool &v) const;
  Status GetStreamNum(size_t &num) const;
  Status GetEventNum(size_t &num) const;
  Status GetOutputShapes(std::vector<ge::Shape> &shapes) const;
  Status GetOutputDtypes(std::vector<ge::DataType> &dtypes) const;
  Status GetIOIndexesWithSameAddr(std::vector<std::pair<uint32_t, uint32_t>> &io_indexes) const;

 private:
  CompiledGraphSummary() = default;
  std::shared_ptr<SummaryData> data_{nullptr};
};
using CompiledGraphSummaryPtr = std::shared_ptr<CompiledGraphSummary>;
}  // namespace ge

#endif  // GEMESH_SIM_GE_GE_GRAPH_COMPILE_SUMMARY_H_
