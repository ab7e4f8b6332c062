#include "runner/compiled_model.h"

#include <algorithm>
#include <map>

namespace gemesh::sim {
namespace {

constexpr size_t kBlockAlign = 64;

size_t Align(size_t n) { return (n + kBlockAlign - 1) / kBlockAlign * kBlockAlign; }

bool FullyKnown(const std::vector<int64_t> &dims) {
  return std::all_of(dims.begin(), dims.end(), [](int64_t d) { return d >= 0; });
}

// First-fit arena allocator with coalescing; records the high-water mark.
class ArenaPlanner {
 public:
  size_t Allocate(size_t bytes) {
    bytes = Align(std::max<size_t>(bytes, 1));
    for (auto it = free_.begin(); it != free_.end(); ++it) {
      if (it->second >= bytes) {
        const size_t offset = it->first;
        const size_t rest = it->second - bytes;
        free_.erase(it);
        if (rest > 0) free_[offset + bytes] = rest;
        return offset;
      }
    }
    // Grow, merging a free block that touches the end.
    size_t offset = end_;
    if (!free_.empty()) {
      auto last = std::prev(free_.end());
      if (last->first + last->second == end_) {
        offset = last->first;
        free_.erase(last);
      }
    }
    end_ = offset + bytes;
    return offset;
  }
  void Free(size_t offset, size_t bytes) {
    bytes = Align(std::max<size_t>(bytes, 1));
    auto it = free_.emplace(offset, bytes).first;
    auto next = std::next(it);
    if (next != free_.end() && it->first + it->second == next->first) {
      it->second += next->second;
      free_.erase(next);
    }
    if (it != free_.begin()) {
      auto prev = std::prev(it);
      if (prev->first + prev->second == it->first) {
        prev->second += it->second;
        free_.erase(it);
      }
    }
  }
  size_t end() const { return end_; }

 private:
  std::map<size_t, size_t> free_;
  size_t end_{0};
};

}  // namespace

std::shared_ptr<const CompiledModel> CompiledModel::Compile(const IrGraph &ir, CubePrecision precision) {
  auto m = std::shared_ptr<CompiledModel>(new CompiledModel());
  const size_t n_values = ir.values.size();
  std::vector<TensorMeta> metas(n_values);
  std::vector<bool> known(n_values, false);
  m->slots_.resize(n_values);

  for (size_t v = 0; v < n_values; ++v) {
    const IrValue &val = ir.values[v];
    if (val.constant) {
      metas[v] = TensorMeta{val.constant->dtype, val.constant->dims, val.constant->bytes->data()};
      known[v] = true;
    }
  }
  for (size_t i = 0; i < ir.inputs.size(); ++i) {
    const int v = ir.inputs[i];
    const IrValue &val = ir.values[v];
    if (!val.has_rank || !FullyKnown(val.dims)) {
      throw SimError("input [" + val.name + "] has the dynamic shape " + DimsToString(val.dims) +
                     "; the simulator compiles static graphs only (fix it with the input_shape parser option)");
    }
    if (ge::GetSizeByDataType(val.dtype) <= 0) {
      throw SimError("input [" + val.name + "] has the unsupported type " + DataTypeName(val.dtype));
    }
    metas[v] = TensorMeta{val.dtype, val.dims, nullptr};
    known[v] = true;
    m->slots_[v] = Slot{Place::kInput, i, nullptr};
    m->input_metas_.push_back(metas[v]);
    m->input_names_.push_back(val.name);
  }

  std::vector<Step> steps;
  for (const IrNode &node : ir.nodes) {
    if (!node.domain.empty() && node.domain != "ai.onnx") {
      throw SimError("node [" + node.name + "] uses op " + node.domain + "::" + node.op_type +
                     ", which the simulator does not implement");
    }
    const KernelFactory factory = FindKernel(node.op_type);
    if (factory == nullptr) {
      std::string list;
      for (const auto &op : SupportedOps()) list += (list.empty() ? "" : " ") + op;
      throw SimError("node [" + node.name + "] uses op " + node.op_type +
                     ", which the simulator does not implement (supported: " + list + ")");
    }
    std::vector<const TensorMeta *> in;
    bool all_const = true;
    for (const int v : node.inputs) {
      if (v < 0) {
        in.push_back(nullptr);
        continue;
      }
      if (!known[v]) throw SimError("node [" + node.name + "] reads [" + ir.values[v].name + "] before it is computed");
      in.push_back(&metas[v]);
      all_const = all_const && metas[v].data != nullptr;
    }
    BuildContext ctx(node, ir.opset, in, &m->storage_, precision);
    std::vector<TensorMeta> out(node.outputs.size());
    std::unique_ptr<Kernel> kernel = factory(ctx, out);

    for (size_t o = 0; o < node.outputs.size(); ++o) {
      const int v = node.outputs[o];
      if (v < 0) continue;
      const IrValue &val = ir.values[v];
      if (ge::GetSizeByDataType(out[o].dtype) <= 0) ctx.Fail("output " + std::to_string(o) + " has no supported type");
      // ONNX shape inference and the simulator's own must agree wherever ONNX knows the shape.
      if (val.has_rank && FullyKnown(val.dims) && val.dims != out[o].dims) {
        ctx.Fail("computed output shape " + DimsToString(out[o].dims) + " differs from ONNX shape inference's " +
                 DimsToString(val.dims));
      }
      metas[v] = out[o];
      known[v] = true;
    }
    if (kernel == nullptr) continue;  // every output is a compile-time constant

    if (all_const) {
      // Fold: run the kernel once now and keep the results as constants.
      std::vector<const void *> ins;
      for (const TensorMeta *t : in) ins.push_back(t == nullptr ? nullptr : t->data);
      std::vector<void *> outs;
      for (size_t o = 0; o < node.outputs.size(); ++o) {
        if (node.outputs[o] < 0) {
          outs.push_back(nullptr);
          continue;
        }
        TensorMeta &meta = metas[node.outputs[o]];
        m->storage_.emplace_back(std::max<size_t>(meta.Bytes(), 1));
        meta.data = m->storage_.back().data();
        outs.push_back(m->storage_.back().data());
      }
      std::vector<uint8_t> scratch(kernel->scratch_bytes + kBlockAlign);
      try {
        kernel->Run(KernelArgs{ins.data(), outs.data(), scratch.data()});
      } catch (const SimError &e) {
        ctx.Fail(std::string("constant folding failed: ") + e.what());
      }
      continue;
    }
    Step step;
    step.kernel = std::move(kernel);
    step.inputs = node.inputs;
    step.outputs = node.outputs;
    step.name = node.name;
    steps.push_back(std::move(step));
  }

  // Graph outputs: written in place by the producing step when possible.
  std::vector<int> direct_output(n_values, -1);
  for (size_t i = 0; i < ir.outputs.size(); ++i) {
    const int v = ir.outputs[i];
    if (!known[v]) throw SimError("graph output [" + ir.values[v].name + "] is never computed");
    m->output_metas_.push_back(TensorMeta{metas[v].dtype, metas[v].dims, nullptr});
    const bool produced = metas[v].data == nullptr && m->slots_[v].place != Place::kInput;
    if (produced && direct_output[v] < 0) {
      direct_output[v] = static_cast<int>(i);
      m->slots_[v] = Slot{Place::kOutput, i, nullptr};
    } else {
      m->copies_.push_back(OutputCopy{i, v});
    }
  }

  // Constants read at run time.
  std::vector<bool> const_listed(n_values, false);
  for (const Step &s : steps) {
    for (const int v : s.inputs) {
      if (v < 0 || metas[v].data == nullptr) continue;
      m->slots_[v] = Slot{Place::kConst, 0, metas[v].data};
      if (!const_listed[v]) {
        const_listed[v] = true;
        m->constants_.push_back(ConstBlob{ir.values[v].name, metas[v].data, metas[v].Bytes()});
      }
    }
  }
  for (const OutputCopy &c : m->copies_) {
    if (metas[c.value].data != nullptr) m->slots_[c.value] = Slot{Place::kConst, 0, metas[c.value].data};
  }

  // Memory plan: a value lives from its producing step to its last reader.
  std::vector<int> last_use(n_values, -1);
  for (size_t s = 0; s < steps.size(); ++s) {
    for (const int v : steps[s].inputs) {
      if (v >= 0) last_use[v] = static_cast<int>(s);
    }
  }
  for (const OutputCopy &c : m->copies_) last_use[c.value] = static_cast<int>(steps.size());
  ArenaPlanner planner;
  std::vector<size_t> offset(n_values, 0);
  for (size_t s = 0; s < steps.size(); ++s) {
    Step &step = steps[s];
    for (const int v : step.outputs) {
      if (v < 0 || m->slots_[v].place == Place::kOutput) continue;
      offset[v] = planner.Allocate(metas[v].Bytes());
      m->slots_[v] = Slot{Place::kArena, offset[v], nullptr};
      if (last_use[v] < 0) last_use[v] = static_cast<int>(s);  // unused output: free right after
    }
    if (step.kernel->scratch_bytes > 0) {
      step.scratch_offset = planner.Allocate(step.kernel->scratch_bytes);
      planner.Free(step.scratch_offset, step.kernel->scratch_bytes);
    }
    std::vector<int> seen;
    for (const int v : step.inputs) {
      if (v >= 0 && m->slots_[v].place == Place::kArena && last_use[v] == static_cast<int>(s) &&
          std::find(seen.begin(), seen.end(), v) == seen.end()) {
        seen.push_back(v);
        planner.Free(offset[v], metas[v].Bytes());
      }
    }
    for (const int v : step.outputs) {
      if (v >= 0 && m->slots_[v].place == Place::kArena && last_use[v] == static_cast<int>(s) &&
          std::find(step.inputs.begin(), step.inputs.end(), v) == step.inputs.end()) {
        planner.Free(offset[v], metas[v].Bytes());
      }
    }
  }
  m->arena_bytes_ = planner.end();
  m->steps_ = std::move(steps);
  return m;
}

size_t CompiledModel::ConstBytes() const {
  size_t n = 0;
  for (const ConstBlob &c : constants_) n += c.bytes;
  return n;
}

int64_t CompiledModel::Batch() const {
  if (input_metas_.empty() || input_metas_[0].dims.empty()) return 1;
  return std::max<int64_t>(input_metas_[0].dims[0], 1);
}

void CompiledModel::Run(const std::vector<const void *> &inputs, const std::vector<void *> &outputs, uint8_t *arena) const {
  auto address = [&](int v) -> void * {
    const Slot &s = slots_[v];
    switch (s.place) {
      case Place::kInput: return const_cast<void *>(inputs[s.index]);
      case Place::kConst: return const_cast<uint8_t *>(s.data);
      case Place::kOutput: return outputs[s.index];
      default: return arena + s.index;
    }
  };
  std::vector<const void *> in;
  std::vector<void *> out;
  for (const Step &step : steps_) {
    in.clear();
    out.clear();
    for (const int v : step.inputs) in.push_back(v < 0 ? nullptr : address(v));
    for (const int v : step.outputs) out.push_back(v < 0 ? nullptr : address(v));
    try {
      step.kernel->Run(KernelArgs{in.data(), out.data(), arena + step.scratch_offset});
    } catch (const SimError &e) {
      throw SimError("node [" + step.name + "]: " + e.what());
    }
  }
  for (const OutputCopy &c : copies_) {
    std::memcpy(outputs[c.output], address(c.value), output_metas_[c.output].Bytes());
  }
}

}  // namespace gemesh::sim
