#include "runner/compile_cache.h"

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>

#include <unistd.h>

#include "common/sim_errors.h"

namespace gemesh::sim {
namespace {

constexpr const char *kMagic = "gemesh-sim-compiled-graph 1";

// FNV-1a, 64 bit: stable across builds and machines, which is all a cache key needs.
class Digest {
 public:
  void Bytes(const void *data, size_t n) {
    const auto *p = static_cast<const uint8_t *>(data);
    for (size_t i = 0; i < n; ++i) h_ = (h_ ^ p[i]) * 1099511628211ULL;
  }
  void Int(int64_t v) { Bytes(&v, sizeof v); }
  void Str(const std::string &s) {
    Int(static_cast<int64_t>(s.size()));
    Bytes(s.data(), s.size());
  }
  void Dims(const std::vector<int64_t> &d) {
    Int(static_cast<int64_t>(d.size()));
    for (const int64_t v : d) Int(v);
  }
  void Tensor(const IrTensor *t) {
    Int(t == nullptr ? -1 : static_cast<int64_t>(t->dtype));
    if (t == nullptr) return;
    Dims(t->dims);
    Int(t->bytes ? static_cast<int64_t>(t->bytes->size()) : -1);
    if (t->bytes) Bytes(t->bytes->data(), t->bytes->size());
  }
  uint64_t value() const { return h_; }

 private:
  uint64_t h_{14695981039346656037ULL};
};

std::string Hex(uint64_t v) {
  char buf[17];
  std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(v));
  return buf;
}

std::filesystem::path FileOf(const std::string &dir, const std::string &key) {
  return std::filesystem::path(dir) / (key + ".gemesh-sim-graph");
}

}  // namespace

uint64_t GraphDigest(const IrGraph &ir, const CubePrecision &precision) {
  Digest d;
  d.Int(ir.opset);
  d.Int(static_cast<int64_t>(precision.in));
  d.Int(static_cast<int64_t>(precision.out));
  d.Int(static_cast<int64_t>(ir.values.size()));
  for (const IrValue &v : ir.values) {
    d.Str(v.name);
    d.Int(static_cast<int64_t>(v.dtype));
    d.Int(v.has_rank ? 1 : 0);
    d.Dims(v.dims);
    d.Tensor(v.constant.get());
  }
  d.Int(static_cast<int64_t>(ir.nodes.size()));
  for (const IrNode &n : ir.nodes) {
    d.Str(n.name);
    d.Str(n.op_type);
    d.Str(n.domain);
    d.Dims(std::vector<int64_t>(n.inputs.begin(), n.inputs.end()));
    d.Dims(std::vector<int64_t>(n.outputs.begin(), n.outputs.end()));
    d.Int(static_cast<int64_t>(n.attrs.size()));
    for (const auto &[name, a] : n.attrs) {
      d.Str(name);
      d.Int(static_cast<int64_t>(a.kind));
      d.Int(a.i);
      d.Bytes(&a.f, sizeof a.f);
      d.Str(a.s);
      d.Dims(a.ints);
      d.Int(static_cast<int64_t>(a.floats.size()));
      if (!a.floats.empty()) d.Bytes(a.floats.data(), a.floats.size() * sizeof(float));
      d.Int(static_cast<int64_t>(a.strings.size()));
      for (const auto &s : a.strings) d.Str(s);
      d.Tensor(a.t.get());
    }
  }
  d.Dims(std::vector<int64_t>(ir.inputs.begin(), ir.inputs.end()));
  d.Dims(std::vector<int64_t>(ir.outputs.begin(), ir.outputs.end()));
  return d.value();
}

bool CacheLookup(const std::string &dir, const std::string &key, uint64_t digest) {
  std::error_code ec;
  if (!std::filesystem::is_directory(dir, ec)) {
    throw SimError("ge.graph_compiler_cache_dir [" + dir + "] does not exist or is not a directory (create it first)");
  }
  std::ifstream in(FileOf(dir, key));
  if (!in) return false;
  std::string magic, word, hex;
  std::getline(in, magic);
  in >> word >> hex;
  if (magic != kMagic || word != "digest") {
    throw SimError("the compile cache file for ge.graph_key [" + key + "] in [" + dir + "] is not one the simulator wrote");
  }
  if (hex != Hex(digest)) {
    throw SimError("the compile cache holds another graph under ge.graph_key [" + key + "] (GE would load it as it is): "
                   "the key must change whenever the graph, its shapes or its options do");
  }
  return true;
}

void CacheStore(const std::string &dir, const std::string &key, uint64_t digest) {
  const std::filesystem::path target = FileOf(dir, key);
  std::ostringstream unique;
  unique << ".tmp" << getpid() << '.' << std::this_thread::get_id();
  const std::filesystem::path tmp = target.string() + unique.str();
  {
    std::ofstream out(tmp);
    out << kMagic << "\ndigest " << Hex(digest) << "\n";
    if (!out) throw SimError("cannot write the compile cache file " + tmp.string());
  }
  std::error_code ec;
  std::filesystem::rename(tmp, target, ec);
  if (ec) throw SimError("cannot write the compile cache file " + target.string() + ": " + ec.message());
}

}  // namespace gemesh::sim
