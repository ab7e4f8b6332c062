// GE's v1 session API over the simulator: GEInitialize/GEFinalize, Session
// (AddGraph, CompileGraph, LoadGraph, ExecuteGraphWithStreamAsync, RemoveGraph)
// and CompiledGraphSummary. GE's rules are enforced: compile before load, load
// before execute, one load per graph, and one graph id on one stream at a time.
#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>
#include <mutex>
#include <thread>

#include "acl/acl.h"
#include "common/graph_ir.h"
#include "common/sim_env.h"
#include "common/sim_errors.h"
#include "common/sim_runtime.h"
#include "ge/ge_api.h"
#include "runner/compile_cache.h"
#include "runner/compiled_model.h"
#include "runner/core_pool.h"
#include "runner/latency.h"
#include "runner/options.h"

namespace ge {
class CompiledGraphSummary::SummaryData {
 public:
  size_t const_bytes{0};
  size_t feature_bytes{0};
  std::vector<ge::Shape> shapes;
  std::vector<ge::DataType> dtypes;
};

class CompiledGraphSummary::Builder {
 public:
  static CompiledGraphSummaryPtr Build(const gemesh::sim::CompiledModel &model) {
    auto s = std::shared_ptr<CompiledGraphSummary>(new CompiledGraphSummary());
    s->data_ = std::make_shared<SummaryData>();
    s->data_->const_bytes = model.ConstBytes();
    s->data_->feature_bytes = model.FeatureBytes();
    for (const auto &o : model.outputs()) {
      s->data_->shapes.emplace_back(o.dims);
      s->data_->dtypes.push_back(o.dtype);
    }
    return s;
  }
};
}  // namespace ge

namespace gemesh::sim {
namespace {

using Clock = std::chrono::steady_clock;

int DeviceCount() {
  uint32_t n = 0;
  return aclrtGetDeviceCount(&n) == ACL_SUCCESS ? static_cast<int>(n) : 0;
}

// Device memory charged for a loaded graph (or, with constLifecycle=session, for a session's weights).
struct Charge {
  void *ptr{nullptr};
  size_t bytes{0};
  ~Charge() {
    if (ptr != nullptr) DeviceFree(ptr);
  }
};

struct SharedConst {
  std::shared_ptr<Charge> charge;
  const uint8_t *data;
  size_t bytes;
};

struct GraphEntry {
  uint32_t id{0};
  std::shared_ptr<const IrGraph> ir;
  OptionMap options;  // graph level
  std::shared_ptr<const CompiledModel> compiled;
  ge::CompiledGraphSummaryPtr summary;
  bool half{false};  // the matrix ops run in fp16/bf16 (timing mode's per-row cost)
  // Loaded state.
  bool loaded{false};
  bool timing{false};
  LatencyModel latency;
  double core_cap{0};  // ge.aicoreNum's cube count (0: the whole device)
  std::shared_ptr<Charge> arena;
  std::vector<std::shared_ptr<Charge>> weights;
  std::vector<std::shared_ptr<Charge>> own_outputs;  // for runs given no output tensors
  // Runs in flight and the stream they are on.
  std::mutex run_mu;
  std::condition_variable run_cv;
  int pending{0};
  void *running_stream{nullptr};
};

struct SessionState {
  uint64_t id{0};
  OptionMap options;
  std::string broken;  // non-empty: why the session could not initialise
  int device{0};
  std::mutex mu;
  std::map<uint32_t, std::shared_ptr<GraphEntry>> graphs;
  std::map<std::string, SharedConst> shared_consts;  // constLifecycle=session
};

struct GeState {
  std::mutex mu;
  bool initialized{false};
  OptionMap global;
  uint64_t next_session{0};
  std::map<uint64_t, std::shared_ptr<SessionState>> sessions;
};

GeState &G() {
  static GeState *state = new GeState();
  return *state;
}

ge::Status Failed(const std::string &message) {
  ReportError(message);
  return ge::FAILED;
}

std::shared_ptr<SessionState> FindSession(uint64_t id) {
  std::lock_guard<std::mutex> lock(G().mu);
  const auto it = G().sessions.find(id);
  return it == G().sessions.end() ? nullptr : it->second;
}

// Looks up a usable session and graph, or reports why not.
ge::Status Resolve(uint64_t session_id, uint32_t graph_id, const char *api, std::shared_ptr<SessionState> *session,
                   std::shared_ptr<GraphEntry> *graph) {
  {
    std::lock_guard<std::mutex> lock(G().mu);
    if (!G().initialized) return Failed(std::string(api) + ": GE is not initialized (call GEInitialize first)");
  }
  *session = FindSession(session_id);
  if (!*session) return Failed(std::string(api) + ": session " + std::to_string(session_id) + " does not exist");
  if (!(*session)->broken.empty()) {
    return Failed(std::string(api) + ": session " + std::to_string(session_id) +
                  " failed to initialize: " + (*session)->broken);
  }
  if (graph == nullptr) return ge::SUCCESS;
  std::lock_guard<std::mutex> lock((*session)->mu);
  const auto it = (*session)->graphs.find(graph_id);
  if (it == (*session)->graphs.end()) {
    return Failed(std::string(api) + ": graph " + std::to_string(graph_id) + " has not been added to session " +
                  std::to_string(session_id));
  }
  *graph = it->second;
  return ge::SUCCESS;
}

void ReleaseLoaded(GraphEntry &g) {
  g.loaded = false;
  g.arena.reset();
  g.weights.clear();
  g.own_outputs.clear();
}

void WaitIdle(GraphEntry &g) {
  std::unique_lock<std::mutex> lock(g.run_mu);
  g.run_cv.wait(lock, [&] { return g.pending == 0; });
}

std::vector<int64_t> DimsOf(const gert::Shape &s) {
  std::vector<int64_t> d;
  for (size_t i = 0; i < s.GetDimNum(); ++i) d.push_back(s.GetDim(i));
  return d;
}

// Checks one I/O tensor against the compiled graph; returns the reason it is unusable, or "".
std::string CheckTensor(const gert::Tensor &t, const TensorMeta &meta, int device, bool writable) {
  (void)writable;
  if (t.GetPlacement() != gert::kOnDeviceHbm && t.GetPlacement() != gert::kOnDeviceP2p) {
    return "is not placed in device memory (only kOnDeviceHbm is supported)";
  }
  if (t.GetDataType() != meta.dtype) {
    return std::string("has type ") + DataTypeName(t.GetDataType()) + " but the graph expects " + DataTypeName(meta.dtype);
  }
  const std::vector<int64_t> dims = DimsOf(t.GetStorageShape());
  if (dims != meta.dims) return "has shape " + DimsToString(dims) + " but the graph was compiled for " + DimsToString(meta.dims);
  const size_t need = meta.Bytes();
  // GE accepts a buffer up to 64 bytes short of the computed size (padding slack).
  if (t.GetSize() + 64 < need) {
    return "E13025: holds " + std::to_string(t.GetSize()) + " bytes but the graph needs " + std::to_string(need);
  }
  int owner = -1;
  if (t.GetAddr() == nullptr || !DeviceRange(t.GetAddr(), need, &owner) || owner != device) {
    return "address is not device memory of " + std::to_string(need) + " bytes on device " + std::to_string(device);
  }
  return "";
}

}  // namespace
}  // namespace gemesh::sim

namespace ge {

using namespace gemesh::sim;

Status GEInitialize(const std::map<AscendString, AscendString> &options) {
  const OptionMap opts = ToOptionMap(options);
  GeState &g = G();
  std::lock_guard<std::mutex> lock(g.mu);
  if (g.initialized) {
    if (opts != g.global) ReportWarning("W10002: GEInitialize called with different options; the new options are ignored");
    return SUCCESS;
  }
  try {
    CheckOptions(opts, OptionLevel::kGlobal, DeviceCount() > 0 ? DeviceCount() : 64);
    CheckPrecisionConflict(opts);
  } catch (const SimError &e) {
    return Failed(std::string("GEInitialize failed: ") + e.what());
  }
  const std::string device = Lookup({&opts}, "ge.exec.deviceId", "-1");
  if (device != "-1" && aclrtSetDevice(std::stoi(device)) != ACL_SUCCESS) {
    const char *acl = aclGetRecentErrMsg();
    return Failed(std::string("GEInitialize failed: cannot set device ") + device + ": " + (acl ? acl : ""));
  }
  g.global = opts;
  g.initialized = true;
  return SUCCESS;
}

Status GEFinalize() {
  GeState &g = G();
  std::lock_guard<std::mutex> lock(g.mu);
  g.initialized = false;
  g.global.clear();
  return SUCCESS;
}

AscendString GEGetErrorMsgV2() { return AscendString(TakeErrors().c_str()); }
AscendString GEGetWarningMsgV2() { return AscendString(TakeWarnings().c_str()); }

Session::Session(const std::map<AscendString, AscendString> &options) {
  auto s = std::make_shared<SessionState>();
  s->options = ToOptionMap(options);
  GeState &g = G();
  OptionMap merged;
  {
    std::lock_guard<std::mutex> lock(g.mu);
    s->id = g.next_session++;
    sessionId_ = s->id;
    if (!g.initialized) s->broken = "GE is not initialized (call GEInitialize first)";
    merged = g.global;
  }
  for (const auto &[k, v] : s->options) merged[k] = v;
  if (s->broken.empty()) {
    try {
      CheckOptions(s->options, OptionLevel::kSession, DeviceCount());
      CheckPrecisionConflict(merged);
      const int current = CurrentDevice();
      s->device = std::stoi(Lookup({&s->options}, "ge.session_device_id", std::to_string(current < 0 ? 0 : current)));
      // Session init binds the calling thread to the session's device, as GE does.
      if (aclrtSetDevice(s->device) != ACL_SUCCESS) {
        const char *acl = aclGetRecentErrMsg();
        throw SimError("cannot set device " + std::to_string(s->device) + ": " + (acl ? acl : ""));
      }
    } catch (const SimError &e) {
      s->broken = e.what();
      ReportError(std::string("Session initialization failed: ") + e.what());
    }
  }
  std::lock_guard<std::mutex> lock(g.mu);
  g.sessions[s->id] = s;
}

Session::~Session() {
  std::shared_ptr<SessionState> s;
  {
    std::lock_guard<std::mutex> lock(G().mu);
    const auto it = G().sessions.find(sessionId_);
    if (it == G().sessions.end()) return;
    s = it->second;
    G().sessions.erase(it);
  }
  std::lock_guard<std::mutex> lock(s->mu);
  for (auto &[id, graph] : s->graphs) {
    WaitIdle(*graph);
    ReleaseLoaded(*graph);
  }
  s->graphs.clear();
  s->shared_consts.clear();
}

uint64_t Session::GetSessionId() const { return sessionId_; }

Status Session::AddGraph(uint32_t graph_id, const Graph &graph) { return AddGraph(graph_id, graph, {}); }

Status Session::AddGraphWithCopy(uint32_t graph_id, const Graph &graph) { return AddGraphWithCopy(graph_id, graph, {}); }

Status Session::AddGraph(uint32_t graph_id, const Graph &graph, const std::map<AscendString, AscendString> &options) {
  std::shared_ptr<SessionState> s;
  if (Resolve(sessionId_, graph_id, "AddGraph", &s, nullptr) != SUCCESS) return FAILED;
  const auto &impl = GraphUtils::Impl(graph);
  if (!impl || !impl->ir) return Failed("AddGraph: graph " + std::to_string(graph_id) + " is empty (parse a model into it first)");
  auto entry = std::make_shared<GraphEntry>();
  entry->id = graph_id;
  entry->ir = impl->ir;  // shared with the caller's Graph, as GE's AddGraph does
  entry->options = ToOptionMap(options);
  try {
    CheckOptions(entry->options, OptionLevel::kGraph, DeviceCount());
    OptionMap merged = s->options;
    for (const auto &[k, v] : entry->options) merged[k] = v;
    CheckPrecisionConflict(merged);
  } catch (const SimError &e) {
    return Failed(std::string("AddGraph of graph ") + std::to_string(graph_id) + " failed: " + e.what());
  }
  std::lock_guard<std::mutex> lock(s->mu);
  if (!s->graphs.emplace(graph_id, entry).second) {
    return Failed("AddGraph: graph id " + std::to_string(graph_id) + " is already in use in this session");
  }
  return SUCCESS;
}

Status Session::AddGraphWithCopy(uint32_t graph_id, const Graph &graph,
                                 const std::map<AscendString, AscendString> &options) {
  Graph copy;
  if (copy.CopyFrom(graph) != GRAPH_SUCCESS) return Failed("AddGraphWithCopy: graph " + std::to_string(graph_id) + " is empty");
  return AddGraph(graph_id, copy, options);
}

Status Session::RemoveGraph(uint32_t graph_id) {
  std::shared_ptr<SessionState> s;
  std::shared_ptr<GraphEntry> g;
  if (Resolve(sessionId_, graph_id, "RemoveGraph", &s, &g) != SUCCESS) return FAILED;
  {
    std::lock_guard<std::mutex> lock(g->run_mu);
    if (g->pending > 0) {
      return Failed("RemoveGraph: graph " + std::to_string(graph_id) +
                    " still has runs in flight; synchronize its stream first");
    }
  }
  std::lock_guard<std::mutex> lock(s->mu);
  ReleaseLoaded(*g);
  s->graphs.erase(graph_id);
  return SUCCESS;
}

Status Session::CompileGraph(uint32_t graph_id) {
  std::shared_ptr<SessionState> s;
  std::shared_ptr<GraphEntry> g;
  if (Resolve(sessionId_, graph_id, "CompileGraph", &s, &g) != SUCCESS) return FAILED;
  if (g->compiled) return SUCCESS;
  for (const char *gear : {"ge.dynamicDims", "ge.inputShape", "ge.dynamicNodeType"}) {
    if (!Lookup({&g->options, &s->options}, gear, "").empty()) {
      return Failed(std::string("CompileGraph: option [") + gear +
                    "] (dynamic gears) is not supported by the simulator; compile one static graph per batch size");
    }
  }
  const OptionMap global = [] {
    std::lock_guard<std::mutex> lock(G().mu);
    return G().global;
  }();
  try {
    const CubePrecision precision = PrecisionOf({&g->options, &s->options, &global});
    auto compiled = CompiledModel::Compile(*g->ir, precision);
    // GE's compiled-graph cache: a hit loads the compiled graph instead of compiling. The simulator
    // compiles anyway (it is quick) and models GE's compile time, which a hit saves.
    const std::string cache_dir = Lookup({&s->options, &global}, "ge.graph_compiler_cache_dir", "");
    const std::string key = Lookup({&g->options}, "ge.graph_key", "");
    const bool cached = !cache_dir.empty() && !key.empty();
    const uint64_t digest = cached ? GraphDigest(*g->ir, precision) : 0;
    if (!cached || !CacheLookup(cache_dir, key, digest)) {
      const double compile_ms = std::strtod(
          Lookup({&g->options, &s->options, &global}, "gemesh.sim.compile_ms", EnvString("GEMESH_SIM_COMPILE_MS", "0")).c_str(),
          nullptr);
      if (compile_ms > 0) std::this_thread::sleep_for(std::chrono::microseconds(static_cast<int64_t>(compile_ms * 1000.0)));
      if (cached) CacheStore(cache_dir, key, digest);
    }
    g->compiled = std::move(compiled);
    g->half = precision.in != FloatFormat::kFp32;
    g->summary = CompiledGraphSummary::Builder::Build(*g->compiled);
  } catch (const SimError &e) {
    return Failed("CompileGraph of graph " + std::to_string(graph_id) + " failed: " + e.what());
  }
  return SUCCESS;
}

CompiledGraphSummaryPtr Session::GetCompiledGraphSummary(uint32_t graph_id) {
  std::shared_ptr<SessionState> s;
  std::shared_ptr<GraphEntry> g;
  if (Resolve(sessionId_, graph_id, "GetCompiledGraphSummary", &s, &g) != SUCCESS) return nullptr;
  if (!g->summary) {
    (void)Failed("E10062: GetCompiledGraphSummary: graph " + std::to_string(graph_id) + " has not been compiled (call "
                 "CompileGraph first)");
  }
  return g->summary;
}

Status Session::LoadGraph(const uint32_t graph_id, const std::map<AscendString, AscendString> &options,
                          void *stream) const {
  std::shared_ptr<SessionState> s;
  std::shared_ptr<GraphEntry> g;
  if (Resolve(sessionId_, graph_id, "LoadGraph", &s, &g) != SUCCESS) return FAILED;
  const std::string where = "LoadGraph of graph " + std::to_string(graph_id) + " failed: ";
  if (!g->compiled) return Failed("E10062: " + where + "the graph has not been compiled (call CompileGraph first)");
  if (g->loaded) return Failed(where + "the graph is already loaded (a graph can be loaded once)");
  try {
    CheckOptions(ToOptionMap(options), OptionLevel::kLoad, DeviceCount());
  } catch (const SimError &e) {
    return Failed(where + e.what());
  }
  const int stream_device = StreamDevice(stream);
  if (stream_device < 0) return Failed(where + "invalid stream handle");
  if (stream_device != s->device) {
    return Failed(where + "the stream belongs to device " + std::to_string(stream_device) + " but the session to device " +
                  std::to_string(s->device));
  }

  // Timing settings: graph > session > global options > environment.
  const OptionMap global = [] {
    std::lock_guard<std::mutex> lock(G().mu);
    return G().global;
  }();
  const std::string timing = Lookup({&g->options, &s->options, &global}, "gemesh.sim.timing", EnvString("GEMESH_SIM_TIMING", "0"));
  const std::string latency =
      Lookup({&g->options, &s->options, &global}, "gemesh.sim.latency_us", EnvString("GEMESH_SIM_LATENCY_US", kDefaultLatency));
  try {
    g->latency = LatencyModel::Parse(latency);
  } catch (const SimError &e) {
    return Failed(where + e.what());
  }
  g->timing = timing == "1";
  // ge.aicoreNum is a compile-time budget of the session: kernels tiled for that many cube cores.
  g->core_cap = std::strtod(Lookup({&s->options, &global}, "ge.aicoreNum", "0").c_str(), nullptr);

  // Weights and feature memory come out of the device's HBM, as on an NPU. The
  // simulator keeps computing from the host copy of the weights, so their
  // device charge has no backing; the arena is real unless in timing mode.
  const bool session_consts = Lookup({&g->options, &s->options, &global}, "ge.constLifecycle", "graph") == "session";
  std::string error;
  auto charge = [&](size_t bytes, bool backed) -> std::shared_ptr<Charge> {
    auto c = std::make_shared<Charge>();
    c->bytes = bytes;
    if (bytes == 0) return c;
    if (DeviceAlloc(s->device, bytes, backed, &c->ptr, &error) != ACL_SUCCESS) return nullptr;
    return c;
  };
  std::vector<std::shared_ptr<Charge>> weights;
  {
    std::lock_guard<std::mutex> lock(s->mu);
    for (const ConstBlob &blob : g->compiled->constants()) {
      if (session_consts) {
        const auto it = s->shared_consts.find(blob.name);
        if (it != s->shared_consts.end() && it->second.bytes == blob.bytes &&
            std::memcmp(it->second.data, blob.data, blob.bytes) == 0) {
          weights.push_back(it->second.charge);
          continue;
        }
      }
      auto c = charge(blob.bytes, false);
      if (!c) {
        ReportAclError("EL0004: " + error);
        return Failed("E19999: " + where + "cannot allocate weight memory: " + error);
      }
      weights.push_back(c);
      if (session_consts && s->shared_consts.count(blob.name) == 0) s->shared_consts[blob.name] = SharedConst{c, blob.data, blob.bytes};
    }
  }
  auto arena = charge(g->compiled->FeatureBytes(), !g->timing);
  if (!arena) {
    ReportAclError("EL0004: " + error);
    return Failed("E19999: " + where + "cannot allocate feature memory: " + error);
  }
  g->weights = std::move(weights);
  g->arena = std::move(arena);
  g->loaded = true;
  return SUCCESS;
}

Status Session::ExecuteGraphWithStreamAsync(uint32_t graph_id, void *stream, const std::vector<gert::Tensor> &inputs,
                                            std::vector<gert::Tensor> &outputs) {
  std::shared_ptr<SessionState> s;
  std::shared_ptr<GraphEntry> g;
  if (Resolve(sessionId_, graph_id, "ExecuteGraphWithStreamAsync", &s, &g) != SUCCESS) return FAILED;
  const std::string where = "ExecuteGraphWithStreamAsync of graph " + std::to_string(graph_id) + " failed: ";
  if (!g->loaded) {
    return Failed("E10062: " + where + "the graph is not loaded (call CompileGraph and LoadGraph before executing)");
  }
  if (CurrentDevice() != s->device) {
    return Failed(where + "the calling thread's current context is " +
                  (CurrentDevice() < 0 ? std::string("not set") : "on device " + std::to_string(CurrentDevice())) +
                  " but the session runs on device " + std::to_string(s->device) + " (call aclrtSetCurrentContext)");
  }
  if (StreamDevice(stream) != s->device) return Failed(where + "the stream is invalid or belongs to another device");
  const CompiledModel &model = *g->compiled;
  if (inputs.size() != model.inputs().size()) {
    return Failed(where + "got " + std::to_string(inputs.size()) + " inputs, the graph has " +
                  std::to_string(model.inputs().size()));
  }
  std::vector<const void *> in_ptrs;
  for (size_t i = 0; i < inputs.size(); ++i) {
    const std::string bad = CheckTensor(inputs[i], model.inputs()[i], s->device, false);
    if (!bad.empty()) return Failed(where + "input " + std::to_string(i) + " [" + model.input_names()[i] + "] " + bad);
    in_ptrs.push_back(inputs[i].GetAddr());
  }
  if (outputs.empty()) {
    // GE allocates the outputs itself, in memory that lives as long as the graph.
    if (g->own_outputs.empty()) {
      for (const auto &meta : model.outputs()) {
        auto c = std::make_shared<Charge>();
        std::string error;
        if (DeviceAlloc(s->device, std::max<size_t>(meta.Bytes(), 1), true, &c->ptr, &error) != ACL_SUCCESS) {
          g->own_outputs.clear();
          return Failed(where + "cannot allocate outputs: " + error);
        }
        g->own_outputs.push_back(c);
      }
    }
    for (size_t i = 0; i < model.outputs().size(); ++i) {
      const auto &meta = model.outputs()[i];
      gert::StorageShape shape;
      for (const int64_t d : meta.dims) {
        shape.MutableOriginShape().AppendDim(d);
        shape.MutableStorageShape().AppendDim(d);
      }
      outputs.emplace_back(shape, gert::StorageFormat(FORMAT_ND, FORMAT_ND, {}), gert::kOnDeviceHbm, meta.dtype,
                           g->own_outputs[i]->ptr);
    }
  }
  if (outputs.size() != model.outputs().size()) {
    return Failed(where + "got " + std::to_string(outputs.size()) + " outputs, the graph has " +
                  std::to_string(model.outputs().size()));
  }
  std::vector<void *> out_ptrs;
  for (size_t i = 0; i < outputs.size(); ++i) {
    const std::string bad = CheckTensor(outputs[i], model.outputs()[i], s->device, true);
    if (!bad.empty()) return Failed(where + "output " + std::to_string(i) + " " + bad);
    out_ptrs.push_back(outputs[i].GetAddr());
  }
  {
    std::lock_guard<std::mutex> lock(g->run_mu);
    if (g->pending > 0 && g->running_stream != stream) {
      return Failed(where + "the graph is still running on another stream (one graph id runs on one stream at a time)");
    }
    ++g->pending;
    g->running_stream = stream;
  }
  auto model_ref = g->compiled;
  auto arena = g->arena;
  const bool timing = g->timing;
  const int device = s->device;
  auto task = [g, model_ref, arena, timing, device, in_ptrs, out_ptrs](std::string *message) -> aclError {
    aclError result = ACL_SUCCESS;
    const auto start = Clock::now();
    if (timing) {
      for (size_t i = 0; i < out_ptrs.size(); ++i) std::memset(out_ptrs[i], 0, model_ref->outputs()[i].Bytes());
      const LatencyModel &l = g->latency;
      const int64_t rows = model_ref->Batch();
      const double hold = l.contended() ? l.LaunchMicros() : l.MicrosFor(rows);
      std::this_thread::sleep_until(start + std::chrono::nanoseconds(static_cast<int64_t>(hold * 1000.0)));
      if (l.contended()) {
        const double span = l.SpanCores(rows);
        const double cap = g->core_cap > 0 && span > 0 ? std::min(g->core_cap, span) : std::max(g->core_cap, span);
        RunOnCores(device, l.CoreMicros(rows, g->half), cap);
      }
    } else {
      try {
        model_ref->Run(in_ptrs, out_ptrs, static_cast<uint8_t *>(arena->ptr));
      } catch (const std::exception &e) {
        *message = "EZ9999: graph " + std::to_string(g->id) + " failed on the device: " + e.what();
        result = ACL_ERROR_RT_MODEL_EXECUTE;
      }
    }
    std::lock_guard<std::mutex> lock(g->run_mu);
    if (--g->pending == 0) {
      g->running_stream = nullptr;
      g->run_cv.notify_all();
    }
    return result;
  };
  if (EnqueueOnStream(stream, task) != ACL_SUCCESS) {
    std::lock_guard<std::mutex> lock(g->run_mu);
    if (--g->pending == 0) g->running_stream = nullptr;
    return Failed(where + "the stream is invalid");
  }
  return SUCCESS;
}

CompiledGraphSummary::~CompiledGraphSummary() = default;
bool CompiledGraphSummary::IsStatic() const { return true; }
Status CompiledGraphSummary::GetConstMemorySize(size_t &size) const {
  size = data_->const_bytes;
  return SUCCESS;
}
Status CompiledGraphSummary::GetFeatureMemorySize(size_t &size) const {
  size = data_->feature_bytes;
  return SUCCESS;
}
Status CompiledGraphSummary::GetFixedFeatureMemorySize(size_t &size) const {
  size = 0;
  return SUCCESS;
}
Status CompiledGraphSummary::GetRefreshableFeatureMemorySize(size_t &size) const {
  size = data_->feature_bytes;
  return SUCCESS;
}
Status CompiledGraphSummary::GetFeatureMemoryBaseRefreshable(bool &v) const {
  v = false;
  return SUCCESS;
}
Status CompiledGraphSummary::GetStreamNum(size_t &num) const {
  num = 1;
  return SUCCESS;
}
Status CompiledGraphSummary::GetEventNum(size_t &num) const {
  num = 0;
  return SUCCESS;
}
Status CompiledGraphSummary::GetOutputShapes(std::vector<ge::Shape> &shapes) const {
  shapes = data_->shapes;
  return SUCCESS;
}
Status CompiledGraphSummary::GetOutputDtypes(std::vector<ge::DataType> &dtypes) const {
  dtypes = data_->dtypes;
  return SUCCESS;
}
Status CompiledGraphSummary::GetIOIndexesWithSameAddr(std::vector<std::pair<uint32_t, uint32_t>> &io_indexes) const {
  io_indexes.clear();
  return SUCCESS;
}

}  // namespace ge
