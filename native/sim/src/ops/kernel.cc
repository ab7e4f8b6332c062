#include "ops/kernel.h"

#include <algorithm>
#include <map>
#include <mutex>

namespace gemesh::sim {
namespace {
std::map<std::string, KernelFactory> &Registry() {
  static std::map<std::string, KernelFactory> registry;
  return registry;
}
}  // namespace

void RegisterKernel(const char *op_type, KernelFactory factory) { Registry()[op_type] = factory; }

KernelFactory FindKernel(const std::string &op_type) {
  const auto it = Registry().find(op_type);
  return it == Registry().end() ? nullptr : it->second;
}

std::vector<std::string> SupportedOps() {
  std::vector<std::string> out;
  for (const auto &[name, f] : Registry()) out.push_back(name);
  return out;
}

const TensorMeta &BuildContext::In(size_t i) const {
  if (!HasInput(i)) Fail("input " + std::to_string(i) + " is required");
  return *inputs_[i];
}

std::vector<int64_t> BuildContext::ConstInts(size_t i) const {
  const TensorMeta &m = In(i);
  if (m.data == nullptr) Fail("input " + std::to_string(i) + " must be a constant (static graphs only)");
  std::vector<int64_t> out(static_cast<size_t>(m.Elements()));
  if (m.dtype == ge::DT_INT64) {
    std::memcpy(out.data(), m.data, out.size() * sizeof(int64_t));
  } else if (m.dtype == ge::DT_INT32) {
    const auto *p = reinterpret_cast<const int32_t *>(m.data);
    for (size_t k = 0; k < out.size(); ++k) out[k] = p[k];
  } else {
    Fail("input " + std::to_string(i) + " must be int64 or int32, not " + DataTypeName(m.dtype));
  }
  return out;
}

std::vector<float> BuildContext::ConstFloats(size_t i) const {
  const TensorMeta &m = In(i);
  if (m.data == nullptr) Fail("input " + std::to_string(i) + " must be a constant");
  if (m.dtype != ge::DT_FLOAT) Fail("input " + std::to_string(i) + " must be float32");
  std::vector<float> out(static_cast<size_t>(m.Elements()));
  std::memcpy(out.data(), m.data, out.size() * sizeof(float));
  return out;
}

const IrAttr *BuildContext::Attr(const char *name) const {
  const auto it = node_.attrs.find(name);
  return it == node_.attrs.end() ? nullptr : &it->second;
}

int64_t BuildContext::Int(const char *name, int64_t fallback) const {
  const IrAttr *a = Attr(name);
  if (a == nullptr) return fallback;
  if (a->kind != IrAttr::Kind::kInt) Fail(std::string("attribute ") + name + " must be an int");
  return a->i;
}

float BuildContext::Float(const char *name, float fallback) const {
  const IrAttr *a = Attr(name);
  if (a == nullptr) return fallback;
  if (a->kind == IrAttr::Kind::kInt) return static_cast<float>(a->i);
  if (a->kind != IrAttr::Kind::kFloat) Fail(std::string("attribute ") + name + " must be a float");
  return a->f;
}

std::string BuildContext::Str(const char *name, const std::string &fallback) const {
  const IrAttr *a = Attr(name);
  if (a == nullptr) return fallback;
  if (a->kind != IrAttr::Kind::kString) Fail(std::string("attribute ") + name + " must be a string");
  return a->s;
}

std::vector<int64_t> BuildContext::Ints(const char *name, const std::vector<int64_t> &fallback) const {
  const IrAttr *a = Attr(name);
  if (a == nullptr) return fallback;
  if (a->kind != IrAttr::Kind::kInts) Fail(std::string("attribute ") + name + " must be a list of ints");
  return a->ints;
}

uint8_t *BuildContext::NewConst(size_t bytes) {
  storage_->emplace_back(std::max<size_t>(bytes, 1));
  return storage_->back().data();
}

void BuildContext::Fail(const std::string &message) const {
  throw SimError("node '" + node_.name + "' (" + node_.op_type + "): " + message);
}

void BuildContext::RequireType(size_t input, std::initializer_list<ge::DataType> allowed) const {
  const ge::DataType dt = In(input).dtype;
  for (const ge::DataType a : allowed) {
    if (a == dt) return;
  }
  Fail("input " + std::to_string(input) + " has type " + DataTypeName(dt) + ", which the simulator does not support here");
}

int64_t NormalizeAxis(const BuildContext &ctx, int64_t axis, int64_t rank) {
  if (axis < -rank || axis >= std::max<int64_t>(rank, 1)) {
    ctx.Fail("axis " + std::to_string(axis) + " is out of range for rank " + std::to_string(rank));
  }
  return axis < 0 ? axis + rank : axis;
}

Broadcast MakeBroadcast(const BuildContext &ctx, const std::vector<const std::vector<int64_t> *> &in_dims) {
  Broadcast b;
  b.inputs = static_cast<int>(in_dims.size());
  size_t rank = 0;
  for (const auto *d : in_dims) rank = std::max(rank, d->size());
  b.out_dims.assign(rank, 1);
  for (const auto *d : in_dims) {
    const size_t shift = rank - d->size();
    for (size_t i = 0; i < d->size(); ++i) {
      const int64_t v = (*d)[i];
      int64_t &o = b.out_dims[shift + i];
      if (v == o || v == 1) continue;
      if (o == 1) {
        o = v;
        continue;
      }
      std::string shapes;
      for (const auto *x : in_dims) shapes += DimsToString(*x) + " ";
      ctx.Fail("shapes " + shapes + "cannot be broadcast together");
    }
  }
  b.total = 1;
  for (const int64_t d : b.out_dims) b.total *= d;

  // Full strides per input, right-aligned, 0 where broadcast.
  std::vector<std::vector<int64_t>> full(in_dims.size(), std::vector<int64_t>(rank, 0));
  for (size_t k = 0; k < in_dims.size(); ++k) {
    const auto &d = *in_dims[k];
    const size_t shift = rank - d.size();
    int64_t stride = 1;
    for (size_t i = d.size(); i-- > 0;) {
      full[k][shift + i] = d[i] == 1 ? 0 : stride;
      stride *= d[i];
    }
  }
  // Coalesce: drop size-1 dims, merge a dim into its inner neighbour when every
  // input walks both contiguously (or broadcasts both).
  for (size_t i = 0; i < rank; ++i) {
    if (b.out_dims[i] == 1) continue;
    if (!b.dims.empty()) {
      bool merge = true;
      for (size_t k = 0; k < in_dims.size(); ++k) {
        merge = merge && b.strides[k].back() == full[k][i] * b.out_dims[i];
      }
      if (merge) {
        b.dims.back() *= b.out_dims[i];
        for (size_t k = 0; k < in_dims.size(); ++k) b.strides[k].back() = full[k][i];
        continue;
      }
    }
    b.dims.push_back(b.out_dims[i]);
    for (size_t k = 0; k < in_dims.size(); ++k) b.strides[k].push_back(full[k][i]);
  }
  return b;
}

}  // namespace gemesh::sim
