#include "model.h"

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "errors.h"
#include "parser/onnx_parser.h"
#include "runtime.h"

namespace gemesh {
namespace {

constexpr uint32_t kMaxStreams = 64;
constexpr uint32_t kMaxTiers = 64;
constexpr uint32_t kMaxInputs = 64;

const char *DtypeName(int32_t dt) {
  switch (dt) {
    case GEMESH_DT_FLOAT: return "FLOAT";
    case GEMESH_DT_FLOAT16: return "FLOAT16";
    case GEMESH_DT_INT8: return "INT8";
    case GEMESH_DT_INT32: return "INT32";
    case GEMESH_DT_UINT8: return "UINT8";
    case GEMESH_DT_INT16: return "INT16";
    case GEMESH_DT_UINT16: return "UINT16";
    case GEMESH_DT_UINT32: return "UINT32";
    case GEMESH_DT_INT64: return "INT64";
    case GEMESH_DT_UINT64: return "UINT64";
    case GEMESH_DT_DOUBLE: return "DOUBLE";
    case GEMESH_DT_BOOL: return "BOOL";
    case GEMESH_DT_BF16: return "BF16";
    default: return "UNSUPPORTED";
  }
}

int ElementSize(int32_t dt) {
  if (std::string(DtypeName(dt)) == "UNSUPPORTED") return -1;
  return ge::GetSizeByDataType(static_cast<ge::DataType>(dt));
}

std::string DimsText(const std::vector<int64_t> &dims) {
  std::string s = "[";
  for (size_t i = 0; i < dims.size(); ++i) s += (i ? "," : "") + std::to_string(dims[i]);
  return s + "]";
}

bool IsMemoryError(int acl) {
  return acl == ACL_ERROR_RT_MEMORY_ALLOCATION || acl == ACL_ERROR_BAD_ALLOC ||
         acl == static_cast<int>(ACL_ERROR_GE_MEMORY_ALLOCATION);
}

[[noreturn]] void Invalid(const std::string &message) { throw BridgeError(GEMESH_ERR_INVALID_ARGUMENT, message); }

gert::Tensor DeviceTensor(const std::vector<int64_t> &dims, int32_t dtype, void *address) {
  gert::StorageShape shape;
  for (const int64_t d : dims) {
    shape.MutableOriginShape().AppendDim(d);
    shape.MutableStorageShape().AppendDim(d);
  }
  return gert::Tensor(shape, gert::StorageFormat(ge::FORMAT_ND, ge::FORMAT_ND, gert::ExpandDimsType()),
                      gert::kOnDeviceHbm, static_cast<ge::DataType>(dtype), address);
}

void *DeviceAlloc(uint64_t bytes, const std::string &what) {
  void *ptr = nullptr;
  // 32-byte aligned by aclrtMalloc; a zero-size tensor still gets a valid address.
  const aclError e = aclrtMalloc(&ptr, std::max<uint64_t>(bytes, 32), ACL_MEM_MALLOC_HUGE_FIRST);
  if (e != ACL_SUCCESS) {
    ThrowAcl(IsMemoryError(e) ? GEMESH_ERR_OUT_OF_MEMORY : GEMESH_ERR_LOAD,
             "aclrtMalloc of " + std::to_string(bytes) + " bytes for " + what + " failed", e);
  }
  return ptr;
}

constexpr const char *kCacheDir = "ge.graph_compiler_cache_dir";
constexpr const char *kGraphKey = "ge.graph_key";

// FNV-1a, 64 bit, as 16 hex digits: a stable name for a cache key.
class Fnv {
 public:
  void Add(const char *data, size_t n) {
    for (size_t i = 0; i < n; ++i) h_ = (h_ ^ static_cast<uint8_t>(data[i])) * 1099511628211ULL;
  }
  void Add(const std::string &s) {
    const uint64_t n = s.size();
    Add(reinterpret_cast<const char *>(&n), sizeof n);
    Add(s.data(), s.size());
  }
  std::string Hex() const {
    char buf[17];
    std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(h_));
    return buf;
  }

 private:
  uint64_t h_{14695981039346656037ULL};
};

std::string FileDigest(const std::string &path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) Invalid("cannot read the model file '" + path + "' to key its compile cache entries");
  Fnv f;
  std::vector<char> buf(1 << 20);
  while (in.read(buf.data(), static_cast<std::streamsize>(buf.size())) || in.gcount() > 0) {
    f.Add(buf.data(), static_cast<size_t>(in.gcount()));
  }
  return f.Hex();
}

}  // namespace

std::shared_ptr<Model> Model::Load(const gemesh_model_config &c, const Options &global_options) {
  if (c.model_path == nullptr || *c.model_path == '\0') Invalid("model_path is empty");
  if (c.stream_count < 1 || c.stream_count > kMaxStreams) Invalid("stream_count must be 1.." + std::to_string(kMaxStreams));
  if (c.tier_count < 1 || c.tier_count > kMaxTiers) Invalid("tier_count must be 1.." + std::to_string(kMaxTiers));
  if (c.input_count < 1 || c.input_count > kMaxInputs) Invalid("input_count must be 1.." + std::to_string(kMaxInputs));
  if (c.input_names == nullptr || c.input_dtypes == nullptr || c.input_ranks == nullptr || c.input_dims == nullptr) {
    Invalid("input_names, input_dtypes, input_ranks and input_dims are required");
  }
  if (c.device_id < 0) Invalid("device_id must be >= 0");

  std::shared_ptr<Model> m(new Model());
  m->device_ = c.device_id;
  m->path_ = c.model_path;
  m->tiers_.resize(c.tier_count);
  size_t cursor = 0;
  for (uint32_t t = 0; t < c.tier_count; ++t) {
    for (uint32_t i = 0; i < c.input_count; ++i) {
      TensorSpec spec;
      if (c.input_names[i] == nullptr || *c.input_names[i] == '\0') Invalid("input " + std::to_string(i) + " has no name");
      spec.name = c.input_names[i];
      if (spec.name.find_first_of(";,") != std::string::npos) {
        Invalid("input name '" + spec.name + "' contains ';' or ',', which GE's input_shape option cannot express");
      }
      spec.dtype = c.input_dtypes[i];
      const int elem = ElementSize(spec.dtype);
      if (elem <= 0) Invalid("input '" + spec.name + "' has unsupported dtype " + std::to_string(spec.dtype));
      const uint32_t rank = c.input_ranks[i];
      if (rank < 1 || rank > GEMESH_MAX_RANK) Invalid("input '" + spec.name + "' rank must be 1.." + std::to_string(GEMESH_MAX_RANK));
      spec.bytes = static_cast<uint64_t>(elem);
      for (uint32_t d = 0; d < rank; ++d) {
        const int64_t dim = c.input_dims[cursor++];
        if (dim < 1) Invalid("input '" + spec.name + "' of tier " + std::to_string(t) + " has dim " + std::to_string(dim) + " (dims must be >= 1)");
        spec.dims.push_back(dim);
        spec.bytes *= static_cast<uint64_t>(dim);
      }
      for (uint32_t j = 0; j < i; ++j) {
        if (m->tiers_[t].inputs[j].name == spec.name) Invalid("input '" + spec.name + "' is listed twice");
      }
      m->tiers_[t].inputs.push_back(spec);
    }
  }
  const Options graph_options = ReadOptions(c.graph_options, c.graph_option_count, "graph options");
  const Options caller_session = ReadOptions(c.session_options, c.session_option_count, "session options");
  m->precision_ = PrecisionInEffect(global_options, caller_session, graph_options);
  const Options session_options = SessionOptions(caller_session, global_options, graph_options, c.device_id);

  try {
    m->ctx_ = Runtime::Get().UseDevice(c.device_id);
    (void)TakeGeError();
    (void)TakeGeWarnings();
    (void)TakeAclError();
    m->OpenSession(c, session_options, graph_options);
    m->PrepareCompileCache(global_options, session_options, graph_options);
    for (uint32_t s = 0; s < c.stream_count; ++s) {
      m->streams_.push_back(std::make_unique<Stream>());
      const aclError e = aclrtCreateStream(&m->streams_.back()->handle);
      if (e != ACL_SUCCESS) ThrowAcl(GEMESH_ERR_LOAD, "aclrtCreateStream for stream " + std::to_string(s) + " failed", e);
    }
    m->slots_.resize(static_cast<size_t>(c.stream_count) * c.tier_count);
    const uint32_t base = Runtime::Get().ReserveGraphIds(c.stream_count * c.tier_count);
    for (uint32_t s = 0; s < c.stream_count; ++s) {
      for (uint32_t t = 0; t < c.tier_count; ++t) m->slots_[s * c.tier_count + t].graph_id = base + t * c.stream_count + s;
    }
    for (uint32_t t = 0; t < c.tier_count; ++t) m->LoadTier(t, c, graph_options);
  } catch (...) {
    std::string ignored;
    m->Release(&ignored);
    throw;
  }
  return m;
}

void Model::PrepareCompileCache(const Options &global, const Options &session, const Options &graph) {
  const auto in_session = session.find(kCacheDir);
  const auto in_global = global.find(kCacheDir);
  const std::string dir = in_session != session.end() ? in_session->second
                          : in_global != global.end() ? in_global->second
                                                      : "";
  if (dir.empty()) return;
  if (graph.count(kGraphKey) != 0) {
    Invalid(std::string(kGraphKey) + " is set by the bridge, one key per tier, when " + kCacheDir +
            " is set; remove it from the graph options");
  }
  std::error_code ec;
  if (!std::filesystem::is_directory(dir, ec)) {
    Invalid(std::string(kCacheDir) + " '" + dir + "' is not a directory; GE needs it to exist (create it first)");
  }
  // GE names a cache entry after the key alone and loads it as it is, so the key covers everything
  // the compiled graph depends on: the model's bytes here, the tier's shapes and every option per tier.
  if (shared_->file_digest.empty()) shared_->file_digest = FileDigest(path_);
  cache_model_digest_ = shared_->file_digest;
  for (const Options *options : {&global, &session, &graph}) {
    for (const auto &[k, v] : *options) cache_options_ += k + '=' + v + '\n';
    cache_options_ += "--\n";
  }
}

void Model::OpenSession(const gemesh_model_config &c, const Options &session_options, const Options &graph_options) {
  const std::string share = c.share_key != nullptr ? c.share_key : "";
  std::string key;
  if (!share.empty()) {
    // The same session only for the same model bytes (the caller's key), file, device and options: graphs
    // compiled with other graph options (say, a precision) could turn the same constant into other weights.
    key = share + '\n' + std::to_string(c.device_id) + '\n' + path_;
    for (const auto &[k, v] : session_options) key += "\ns:" + k + '=' + v;
    for (const auto &[k, v] : graph_options) key += "\ng:" + k + '=' + v;
    shared_ = Runtime::Get().FindSession(key);
  }
  if (!shared_) {
    shared_ = std::make_shared<SharedSession>();
    shared_->device = c.device_id;
    // The Session constructor cannot fail; a broken session fails from its first AddGraph.
    shared_->session = std::make_unique<ge::Session>(ToGe(session_options));
    shared_->warnings = TakeGeWarnings();
    if (!share.empty()) Runtime::Get().ShareSession(key, shared_);
  }
  session_ = shared_->session.get();
  AddWarnings(shared_->warnings);
}

void Model::LoadTier(uint32_t t, const gemesh_model_config &c, const Options &graph_options) {
  Tier &tier = tiers_[t];
  std::string input_shape;
  for (const TensorSpec &in : tier.inputs) {
    if (!input_shape.empty()) input_shape += ';';
    input_shape += in.name + ':';
    for (size_t d = 0; d < in.dims.size(); ++d) input_shape += (d ? "," : "") + std::to_string(in.dims[d]);
  }
  // One parse per tier and session; every stream of every load gets its own copy of the graph
  // (AddGraph would share it).
  std::shared_ptr<ge::Graph> &cached = shared_->parsed[input_shape];
  if (!cached) {
    auto fresh = std::make_shared<ge::Graph>(("gemesh_tier" + std::to_string(t)).c_str());
    const std::map<ge::AscendString, ge::AscendString> parser_params = {
        {ge::AscendString("input_shape"), ge::AscendString(input_shape.c_str())}};
    const ge::graphStatus parsed = ge::aclgrphParseONNX(path_.c_str(), parser_params, *fresh);
    if (parsed != ge::GRAPH_SUCCESS) {
      shared_->parsed.erase(input_shape);
      ThrowGe(GEMESH_ERR_PARSE, "aclgrphParseONNX of '" + path_ + "' with input_shape \"" + input_shape + "\" failed", parsed);
    }
    cached = std::move(fresh);
  }
  const ge::Graph &graph = *cached;
  if (t == 0) ResolveInputOrder(graph);

  Options tier_graph_options = graph_options;
  if (!cache_model_digest_.empty()) {
    Fnv key;
    key.Add(input_shape);
    key.Add(cache_options_);
    tier_graph_options[kGraphKey] = "gemesh_" + cache_model_digest_ + "_" + key.Hex();
  }
  const auto graph_ge_options = ToGe(tier_graph_options);
  for (uint32_t s = 0; s < c.stream_count; ++s) {
    Slot &slot = slots_[s * c.tier_count + t];
    const std::string where = "graph " + std::to_string(slot.graph_id) + " (tier " + std::to_string(t) + ", stream " +
                              std::to_string(s) + ")";
    ge::Status st = session_->AddGraphWithCopy(slot.graph_id, graph, graph_ge_options);
    AddWarnings(TakeGeWarnings());
    if (st != ge::SUCCESS) ThrowGe(GEMESH_ERR_GRAPH, "AddGraph of " + where + " failed", st);
    slot.added = true;
    st = session_->CompileGraph(slot.graph_id);
    if (st != ge::SUCCESS) ThrowGe(GEMESH_ERR_GRAPH, "CompileGraph of " + where + " failed", st);
    if (s == 0) {
      const ge::CompiledGraphSummaryPtr summary = session_->GetCompiledGraphSummary(slot.graph_id);
      if (!summary) ThrowGe(GEMESH_ERR_GRAPH, "GetCompiledGraphSummary of " + where + " failed", ge::FAILED);
      if (!summary->IsStatic()) {
        throw BridgeError(GEMESH_ERR_GRAPH, "the compiled " + where + " is not static; give every input a fixed shape");
      }
      std::vector<ge::Shape> shapes;
      std::vector<ge::DataType> dtypes;
      if (summary->GetOutputShapes(shapes) != ge::SUCCESS || summary->GetOutputDtypes(dtypes) != ge::SUCCESS ||
          shapes.size() != dtypes.size()) {
        ThrowGe(GEMESH_ERR_GRAPH, "reading the output shapes of " + where + " failed", ge::FAILED);
      }
      for (size_t o = 0; o < shapes.size(); ++o) {
        TensorSpec spec;
        spec.dtype = static_cast<int32_t>(dtypes[o]);
        spec.dims = shapes[o].GetDims();
        const int elem = ElementSize(spec.dtype);
        if (elem <= 0 || spec.dims.size() > GEMESH_MAX_RANK) {
          throw BridgeError(GEMESH_ERR_GRAPH, "output " + std::to_string(o) + " of " + where + " has unsupported dtype " +
                                                  std::to_string(spec.dtype) + " or rank " + std::to_string(spec.dims.size()));
        }
        spec.bytes = static_cast<uint64_t>(elem);
        for (const int64_t d : spec.dims) {
          if (d < 0) throw BridgeError(GEMESH_ERR_GRAPH, "output " + std::to_string(o) + " of " + where + " has the dynamic shape " + DimsText(spec.dims));
          spec.bytes *= static_cast<uint64_t>(d);
        }
        tier.outputs.push_back(spec);
      }
      if (t > 0 && tier.outputs.size() != tiers_[0].outputs.size()) {
        throw BridgeError(GEMESH_ERR_GRAPH, "tier " + std::to_string(t) + " has " + std::to_string(tier.outputs.size()) +
                                                " outputs but tier 0 has " + std::to_string(tiers_[0].outputs.size()));
      }
    }
    // Device buffers for this (stream, tier), in graph input/output order.
    slot.in_dev.assign(tier.inputs.size(), nullptr);
    slot.in_tensors.reserve(tier.inputs.size());
    for (size_t p = 0; p < tier.inputs.size(); ++p) {
      const size_t ci = static_cast<size_t>(std::find(graph_input_of_.begin(), graph_input_of_.end(), p) - graph_input_of_.begin());
      const TensorSpec &in = tier.inputs[ci];
      slot.in_dev[p] = DeviceAlloc(in.bytes, "input '" + in.name + "' of " + where);
      slot.in_tensors.push_back(DeviceTensor(in.dims, in.dtype, slot.in_dev[p]));
    }
    slot.out_dev.assign(tier.outputs.size(), nullptr);
    slot.out_tensors.reserve(tier.outputs.size());
    for (size_t o = 0; o < tier.outputs.size(); ++o) {
      slot.out_dev[o] = DeviceAlloc(tier.outputs[o].bytes, "output " + std::to_string(o) + " of " + where);
    }
    st = session_->LoadGraph(slot.graph_id, {}, streams_[s]->handle);
    if (st != ge::SUCCESS) ThrowGe(GEMESH_ERR_LOAD, "LoadGraph of " + where + " failed", st);
  }
}

void Model::ResolveInputOrder(const ge::Graph &graph) {
  struct DataInput {
    int64_t index;
    std::string name;
    ge::DataType dtype;
    std::vector<int64_t> dims;  // -1: any size
  };
  std::vector<DataInput> data;
  for (const ge::GNode &node : graph.GetDirectNode()) {
    ge::AscendString type;
    if (node.GetType(type) != ge::GRAPH_SUCCESS || std::string(type.GetString()) != "Data") continue;
    DataInput d{static_cast<int64_t>(data.size()), "", ge::DT_UNDEFINED, {}};
    ge::AscendString name;
    if (node.GetName(name) == ge::GRAPH_SUCCESS) d.name = name.GetString();
    (void)node.GetAttr(ge::AscendString("index"), d.index);
    ge::TensorDesc desc;
    if (node.GetOutputDesc(0, desc) == ge::GRAPH_SUCCESS) {
      d.dtype = desc.GetDataType();
      d.dims = desc.GetShape().GetDims();
    }
    data.push_back(d);
  }
  std::sort(data.begin(), data.end(), [](const DataInput &a, const DataInput &b) { return a.index < b.index; });
  const std::vector<TensorSpec> &inputs = tiers_[0].inputs;
  std::string names;
  for (const DataInput &d : data) names += (names.empty() ? "" : ", ") + d.name;
  if (data.size() != inputs.size()) {
    throw BridgeError(GEMESH_ERR_PARSE, "the model has " + std::to_string(data.size()) + " inputs (" + names + ") but " +
                                            std::to_string(inputs.size()) + " are configured");
  }
  graph_input_of_.assign(inputs.size(), 0);
  size_t matched = 0;
  std::string missing;
  for (size_t c = 0; c < inputs.size(); ++c) {
    const auto it = std::find_if(data.begin(), data.end(), [&](const DataInput &d) { return d.name == inputs[c].name; });
    if (it == data.end()) {
      missing += (missing.empty() ? "" : ", ") + inputs[c].name;
      continue;
    }
    ++matched;
    graph_input_of_[c] = static_cast<size_t>(it - data.begin());
    if (it->dtype != ge::DT_UNDEFINED && static_cast<int32_t>(it->dtype) != inputs[c].dtype) {
      Invalid("input '" + inputs[c].name + "' is " + DtypeName(it->dtype) + " in the model but configured as " +
              DtypeName(inputs[c].dtype));
    }
  }
  if (matched == inputs.size()) return;
  if (matched == 0) {
    // GE named its Data nodes differently. Order is no evidence (two inputs of one dtype and shape
    // would be swapped without a sound): match each configured input to the one Data node of its
    // dtype and shape, and refuse the load when that is not unique.
    MatchInputsByType(data.size(), [&](size_t c, size_t d) {
      const DataInput &n = data[d];
      return (n.dtype == ge::DT_UNDEFINED || static_cast<int32_t>(n.dtype) == inputs[c].dtype) &&
             SameShape(n.dims, inputs[c].dims);
    }, names);
    AddWarnings("the graph's Data nodes (" + names + ") do not carry the ONNX input names; each input was matched "
                "by its unique dtype and shape");
    return;
  }
  throw BridgeError(GEMESH_ERR_PARSE, "configured input(s) " + missing + " are not inputs of the model (its inputs: " + names + ")");
}

bool Model::SameShape(const std::vector<int64_t> &graph, const std::vector<int64_t> &configured) {
  if (graph.empty()) return true;  // the graph does not say
  if (graph.size() != configured.size()) return false;
  for (size_t i = 0; i < graph.size(); ++i) {
    if (graph[i] >= 0 && configured[i] >= 0 && graph[i] != configured[i]) return false;
  }
  return true;
}

void Model::MatchInputsByType(size_t data_count, const std::function<bool(size_t, size_t)> &fits,
                              const std::string &names) {
  const std::vector<TensorSpec> &inputs = tiers_[0].inputs;
  std::string ambiguous;
  std::vector<bool> taken(data_count, false);
  for (size_t c = 0; c < inputs.size(); ++c) {
    size_t found = 0;
    size_t at = 0;
    for (size_t d = 0; d < data_count; ++d) {
      if (fits(c, d)) {
        ++found;
        at = d;
      }
    }
    if (found != 1 || taken[at]) {
      ambiguous += (ambiguous.empty() ? "" : ", ") + inputs[c].name;
      continue;
    }
    taken[at] = true;
    graph_input_of_[c] = at;
  }
  if (ambiguous.empty()) return;
  throw BridgeError(GEMESH_ERR_PARSE,
                    "the graph's Data nodes (" + names + ") do not carry the ONNX input names, and input(s) " +
                        ambiguous +
                        " cannot be told apart by dtype and shape; keep the ONNX input names on the graph's Data "
                        "nodes (name them as the config does) so each input reaches the right one");
}

void Model::AddWarnings(const std::string &text) {
  std::istringstream lines(text);
  std::string line;
  while (std::getline(lines, line)) {
    if (line.empty() || warnings_.find(line) != std::string::npos) continue;
    warnings_ += (warnings_.empty() ? "" : "\n") + line;
  }
}

const TensorSpec &Model::input(uint32_t tier, uint32_t index) const {
  if (tier >= tiers_.size() || index >= tiers_[tier].inputs.size()) {
    Invalid("tier " + std::to_string(tier) + " / input " + std::to_string(index) + " is out of range");
  }
  return tiers_[tier].inputs[index];
}

const TensorSpec &Model::output(uint32_t tier, uint32_t index) const {
  if (tier >= tiers_.size() || index >= tiers_[tier].outputs.size()) {
    Invalid("tier " + std::to_string(tier) + " / output " + std::to_string(index) + " is out of range");
  }
  return tiers_[tier].outputs[index];
}

void Model::BeginRun() {
  std::lock_guard<std::mutex> lock(run_mu_);
  if (closing_) throw BridgeError(GEMESH_ERR_STATE, "the model is being destroyed");
  ++in_flight_;
}

void Model::EndRun() {
  std::lock_guard<std::mutex> lock(run_mu_);
  if (--in_flight_ == 0) run_cv_.notify_all();
}

void Model::Run(uint32_t stream, uint32_t tier, const void *const *inputs, const size_t *input_sizes,
                uint32_t input_count, void *const *outputs, const size_t *output_sizes, uint32_t output_count) {
  BeginRun();
  struct RunGuard {
    Model *m;
    ~RunGuard() { m->EndRun(); }
  } run_guard{this};

  if (stream >= streams_.size()) Invalid("stream " + std::to_string(stream) + " is out of range (the model has " + std::to_string(streams_.size()) + ")");
  if (tier >= tiers_.size()) Invalid("tier " + std::to_string(tier) + " is out of range (the model has " + std::to_string(tiers_.size()) + ")");
  const Tier &spec = tiers_[tier];
  if (input_count != spec.inputs.size()) Invalid("got " + std::to_string(input_count) + " inputs, the model has " + std::to_string(spec.inputs.size()));
  if (output_count != spec.outputs.size()) Invalid("got " + std::to_string(output_count) + " outputs, the model has " + std::to_string(spec.outputs.size()));
  if ((input_count > 0 && (inputs == nullptr || input_sizes == nullptr)) || (output_count > 0 && (outputs == nullptr || output_sizes == nullptr))) {
    Invalid("input or output arrays are null");
  }
  for (uint32_t i = 0; i < input_count; ++i) {
    if (inputs[i] == nullptr) Invalid("input " + std::to_string(i) + " is null");
    if (input_sizes[i] != spec.inputs[i].bytes) {
      Invalid("input " + std::to_string(i) + " '" + spec.inputs[i].name + "' has " + std::to_string(input_sizes[i]) +
              " bytes but tier " + std::to_string(tier) + " needs exactly " + std::to_string(spec.inputs[i].bytes) + " (" +
              DtypeName(spec.inputs[i].dtype) + " " + DimsText(spec.inputs[i].dims) + ")");
    }
  }
  for (uint32_t o = 0; o < output_count; ++o) {
    if (outputs[o] == nullptr) Invalid("output " + std::to_string(o) + " is null");
    if (output_sizes[o] < spec.outputs[o].bytes) {
      Invalid("output " + std::to_string(o) + " buffer has " + std::to_string(output_sizes[o]) + " bytes but tier " +
              std::to_string(tier) + " produces " + std::to_string(spec.outputs[o].bytes));
    }
  }

  Stream &st = *streams_[stream];
  bool idle = false;
  if (!st.busy.compare_exchange_strong(idle, true)) {
    throw BridgeError(GEMESH_ERR_STATE, "stream " + std::to_string(stream) + " is already running a batch (runs on one stream must not overlap)");
  }
  struct BusyGuard {
    std::atomic<bool> &busy;
    ~BusyGuard() { busy.store(false); }
  } busy_guard{st.busy};

  // The ACL context is per thread: set it on every call (callers may be any thread).
  aclError e = aclrtSetCurrentContext(ctx_);
  if (e != ACL_SUCCESS) ThrowAcl(GEMESH_ERR_EXECUTE, "aclrtSetCurrentContext failed", e);
  Slot &slot = slots_[stream * tiers_.size() + tier];
  for (uint32_t i = 0; i < input_count; ++i) {
    const size_t p = graph_input_of_[i];
    // Host buffers are pageable (JS memory), so a synchronous copy is as fast as an async one.
    e = aclrtMemcpy(slot.in_dev[p], std::max<uint64_t>(spec.inputs[i].bytes, 32), inputs[i], input_sizes[i], ACL_MEMCPY_HOST_TO_DEVICE);
    if (e != ACL_SUCCESS) ThrowAcl(GEMESH_ERR_EXECUTE, "copying input '" + spec.inputs[i].name + "' to the device failed", e);
  }
  slot.out_tensors.clear();
  for (size_t o = 0; o < spec.outputs.size(); ++o) {
    slot.out_tensors.push_back(DeviceTensor(spec.outputs[o].dims, spec.outputs[o].dtype, slot.out_dev[o]));
  }
  const ge::Status status = session_->ExecuteGraphWithStreamAsync(slot.graph_id, st.handle, slot.in_tensors, slot.out_tensors);
  if (status != ge::SUCCESS) {
    ThrowGe(GEMESH_ERR_EXECUTE, "ExecuteGraphWithStreamAsync of graph " + std::to_string(slot.graph_id) + " (tier " +
                                    std::to_string(tier) + ", stream " + std::to_string(stream) + ") failed", status);
  }
  e = aclrtSynchronizeStream(st.handle);
  if (e != ACL_SUCCESS) ThrowAcl(GEMESH_ERR_EXECUTE, "aclrtSynchronizeStream after graph " + std::to_string(slot.graph_id) + " failed", e);
  for (uint32_t o = 0; o < output_count; ++o) {
    e = aclrtMemcpy(outputs[o], output_sizes[o], slot.out_dev[o], spec.outputs[o].bytes, ACL_MEMCPY_DEVICE_TO_HOST);
    if (e != ACL_SUCCESS) ThrowAcl(GEMESH_ERR_EXECUTE, "copying output " + std::to_string(o) + " to the host failed", e);
  }
}

void Model::Destroy() {
  {
    std::unique_lock<std::mutex> lock(run_mu_);
    closing_ = true;
    run_cv_.wait(lock, [this] { return in_flight_ == 0; });
  }
  std::string failures;
  Release(&failures);
  if (!failures.empty()) throw BridgeError(GEMESH_ERR_LOAD, "model teardown: " + failures);
}

Model::~Model() {
  std::string ignored;
  Release(&ignored);
}

void Model::Release(std::string *failures) {
  if (released_) return;
  released_ = true;
  auto note = [&](const std::string &what, int64_t code) {
    std::string detail = TakeGeError();
    const std::string acl = TakeAclError();
    if (!acl.empty()) detail += (detail.empty() ? "" : "; ") + acl;
    *failures += what + " returned " + std::to_string(code) + (detail.empty() ? "" : " (" + detail + ")") + "; ";
  };
  if (ctx_ != nullptr) {
    const aclError e = aclrtSetCurrentContext(ctx_);
    if (e != ACL_SUCCESS) note("aclrtSetCurrentContext", e);
  }
  // Teardown is the reverse of creation: quiesce streams, drop graphs, the session, streams, buffers.
  for (auto &s : streams_) {
    if (s->handle == nullptr) continue;
    const aclError e = aclrtSynchronizeStream(s->handle);
    if (e != ACL_SUCCESS) note("aclrtSynchronizeStream", e);
  }
  for (Slot &slot : slots_) {
    slot.out_tensors.clear();
    slot.in_tensors.clear();
    if (slot.added && session_ != nullptr) {
      const ge::Status st = session_->RemoveGraph(slot.graph_id);
      if (st != ge::SUCCESS) note("RemoveGraph(" + std::to_string(slot.graph_id) + ")", st);
      slot.added = false;
    }
  }
  // The last load holding a shared session deletes it (and with it the weights).
  session_ = nullptr;
  shared_.reset();
  for (auto &s : streams_) {
    if (s->handle == nullptr) continue;
    const aclError e = aclrtDestroyStream(s->handle);
    if (e != ACL_SUCCESS) note("aclrtDestroyStream", e);
    s->handle = nullptr;
  }
  for (Slot &slot : slots_) {
    for (auto *list : {&slot.in_dev, &slot.out_dev}) {
      for (void *&p : *list) {
        if (p == nullptr) continue;
        const aclError e = aclrtFree(p);
        if (e != ACL_SUCCESS) note("aclrtFree", e);
        p = nullptr;
      }
    }
  }
}

}  // namespace gemesh
