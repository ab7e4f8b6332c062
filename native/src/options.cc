#include "options.h"

#include "errors.h"

namespace gemesh {
namespace {
constexpr const char *kRunMode = "ge.graphRunMode";
constexpr const char *kPrecision = "ge.exec.precision_mode";
constexpr const char *kPrecisionV2 = "ge.exec.precision_mode_v2";

void RequireInference(const Options &options, const char *what) {
  const auto it = options.find(kRunMode);
  if (it != options.end() && it->second != "0") {
    throw BridgeError(GEMESH_ERR_INVALID_ARGUMENT, std::string(what) + ": ge.graphRunMode must be 0 (the bridge serves "
                                                                        "inference), got \"" + it->second + "\"");
  }
}

bool HasPrecision(const Options &o) { return o.count(kPrecision) != 0 || o.count(kPrecisionV2) != 0; }

// GE's own precision for inference when no key is given: the op engine reads
// ge.exec.precision_mode, then _v2, and with neither and ge.graphRunMode=0 picks
// force_fp16 (FEContextUtils::SetDefaultPrecisionMode in hicann/ge
// compiler/engines/nn_engine/utils/common/fe_context_utils.cc, the same in every
// tag from v8.5.0 to v9.2, where open-source GE starts, so 8.3.RC is assumed to
// match; documented in docs/zh/api/graph_engine_api/cpp/ge/options_params/
// precision_tuning.md: online inference defaults to force_fp16 / v2 "fp16").
// The GE backend sets no precision key, so it runs at this default; the bridge
// passes the v2 spelling of it explicitly, so the choice is visible and logged.
constexpr const char *kGeInferenceDefault = "fp16";
}  // namespace

Options ReadOptions(const gemesh_option *options, size_t count, const char *what) {
  Options out;
  if (count > 0 && options == nullptr) {
    throw BridgeError(GEMESH_ERR_INVALID_ARGUMENT, std::string(what) + ": option array is null but count is " + std::to_string(count));
  }
  for (size_t i = 0; i < count; ++i) {
    if (options[i].key == nullptr || options[i].value == nullptr) {
      throw BridgeError(GEMESH_ERR_INVALID_ARGUMENT, std::string(what) + ": option " + std::to_string(i) + " has a null key or value");
    }
    if (!out.emplace(options[i].key, options[i].value).second) {
      throw BridgeError(GEMESH_ERR_INVALID_ARGUMENT, std::string(what) + ": option " + options[i].key + " is given twice");
    }
  }
  return out;
}

Options GlobalOptions(Options caller) {
  RequireInference(caller, "global options");
  caller[kRunMode] = "0";
  return caller;
}

Options SessionOptions(Options caller, const Options &global, const Options &graph, int32_t device) {
  RequireInference(caller, "session options");
  RequireInference(graph, "graph options");
  const std::string dev = std::to_string(device);
  const auto it = caller.find("ge.session_device_id");
  if (it != caller.end() && it->second != dev) {
    throw BridgeError(GEMESH_ERR_INVALID_ARGUMENT, "session options: ge.session_device_id=" + it->second +
                                                       " contradicts the model's device_id " + dev);
  }
  caller["ge.session_device_id"] = dev;
  caller[kRunMode] = "0";
  caller.emplace("ge.constLifecycle", "session");  // weights shared by all graphs of the model
  if (!HasPrecision(caller) && !HasPrecision(global) && !HasPrecision(graph)) caller[kPrecisionV2] = kGeInferenceDefault;
  return caller;
}

std::string PrecisionInEffect(const Options &global, const Options &caller_session, const Options &graph) {
  // GE's precedence: graph > session > global.
  const std::pair<const Options *, const char *> levels[] = {{&graph, "graph"}, {&caller_session, "session"}, {&global, "global"}};
  for (const auto &[options, level] : levels) {
    for (const char *key : {kPrecision, kPrecisionV2}) {
      const auto it = options->find(key);
      if (it != options->end()) return std::string(key) + "=" + it->second + " (" + level + ")";
    }
  }
  return std::string(kPrecisionV2) + "=" + kGeInferenceDefault + " (default)";
}

std::map<ge::AscendString, ge::AscendString> ToGe(const Options &options) {
  std::map<ge::AscendString, ge::AscendString> out;
  for (const auto &[k, v] : options) out.emplace(ge::AscendString(k.c_str()), ge::AscendString(v.c_str()));
  return out;
}

}  // namespace gemesh
