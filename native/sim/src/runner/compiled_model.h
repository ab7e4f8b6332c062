// A graph compiled for static shapes: every value's dtype and dims, constants
// folded, the remaining nodes as kernels in order, and a memory plan that
// places every intermediate value in one "feature memory" arena with reuse.
#ifndef GEMESH_SIM_RUNNER_COMPILED_MODEL_H_
#define GEMESH_SIM_RUNNER_COMPILED_MODEL_H_

#include <deque>
#include <memory>
#include <string>
#include <vector>

#include "common/graph_ir.h"
#include "ops/kernel.h"

namespace gemesh::sim {

struct ConstBlob {
  std::string name;
  const uint8_t *data;
  size_t bytes;
};

class CompiledModel {
 public:
  /// Throws SimError with a readable reason (unsupported op, dynamic shape, bad node).
  /// `precision` is what the precision mode in effect does to the matrix ops.
  static std::shared_ptr<const CompiledModel> Compile(const IrGraph &ir, CubePrecision precision = {});

  const std::vector<TensorMeta> &inputs() const { return input_metas_; }
  const std::vector<TensorMeta> &outputs() const { return output_metas_; }
  const std::vector<std::string> &input_names() const { return input_names_; }
  /// Constants the kernels read at run time (weights), for HBM accounting.
  const std::vector<ConstBlob> &constants() const { return constants_; }
  size_t ConstBytes() const;
  size_t FeatureBytes() const { return arena_bytes_; }
  /// Dim 0 of the first input (1 for a scalar input): the batch the timing model uses.
  int64_t Batch() const;

  /// Runs the graph. inputs/outputs hold one address per graph input/output with
  /// at least the compiled byte size; arena has FeatureBytes(). Throws SimError.
  void Run(const std::vector<const void *> &inputs, const std::vector<void *> &outputs, uint8_t *arena) const;

 private:
  enum class Place { kInput, kConst, kArena, kOutput };
  struct Slot {
    Place place{Place::kArena};
    size_t index{0};   // input / output position, or arena offset
    const uint8_t *data{nullptr};  // constants
  };
  struct Step {
    std::unique_ptr<Kernel> kernel;
    std::vector<int> inputs;   // value ids (-1 = omitted)
    std::vector<int> outputs;  // value ids (-1 = omitted)
    size_t scratch_offset{0};
    std::string name;
  };
  struct OutputCopy {
    size_t output;  // graph output position
    int value;      // value to copy from
  };

  std::vector<Slot> slots_;  // per value
  std::vector<Step> steps_;
  std::vector<OutputCopy> copies_;
  std::vector<TensorMeta> input_metas_, output_metas_;
  std::vector<std::string> input_names_;
  std::vector<ConstBlob> constants_;
  size_t arena_bytes_{0};
  std::deque<std::vector<uint8_t>> storage_;  // folded constants
};

}  // namespace gemesh::sim

#endif  // GEMESH_SIM_RUNNER_COMPILED_MODEL_H_
