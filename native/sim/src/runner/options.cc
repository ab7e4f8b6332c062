#include "runner/options.h"

#include <cstdlib>
#include <functional>
#include <regex>
#include <set>
#include <vector>

#include "common/sim_errors.h"
#include "runner/core_pool.h"
#include "runner/latency.h"

namespace gemesh::sim {
namespace {

constexpr unsigned kG = 1, kS = 2, kGr = 4, kL = 8;

using Validator = std::function<std::string(const std::string &value, int device_count)>;  // "" = ok, else reason

Validator OneOf(std::vector<std::string> allowed) {
  return [allowed](const std::string &v, int) -> std::string {
    for (const auto &a : allowed) {
      if (v == a) return "";
    }
    std::string list;
    for (const auto &a : allowed) list += (list.empty() ? "" : ", ") + (a.empty() ? std::string("\"\"") : a);
    return "it must be one of: " + list;
  };
}

Validator IntRange(int64_t lo, bool hi_is_devices, int64_t hi = 0) {
  return [=](const std::string &v, int devices) -> std::string {
    char *end = nullptr;
    const long long n = std::strtoll(v.c_str(), &end, 10);
    const int64_t max = hi_is_devices ? devices - 1 : hi;
    if (v.empty() || *end != '\0' || n < lo || n > max) {
      return "it must be an integer from " + std::to_string(lo) + " to " + std::to_string(max);
    }
    return "";
  };
}

Validator Matches(const char *pattern, const char *what) {
  const std::regex re(pattern);
  const std::string reason = std::string("it must be ") + what;
  return [re, reason](const std::string &v, int) -> std::string { return std::regex_match(v, re) ? "" : reason; };
}

// "cube|vector", "cube|" or "cube"; the cube count within the device's (GEMESH_SIM_AICORES), as GE
// refuses counts above the chip's.
Validator AiCoreNum() {
  const std::regex re(R"((\d+)(\|\d*)?)");
  return [re](const std::string &v, int) -> std::string {
    std::smatch m;
    const int cores = DeviceAiCores();
    if (!std::regex_match(v, m, re)) return "it must be \"cube|vector\" core counts, e.g. 12|10";
    const long long cube = std::strtoll(m[1].str().c_str(), nullptr, 10);
    if (cube < 1 || cube > cores) {
      return "the cube core count must be from 1 to " + std::to_string(cores) + ", the device's AI cores";
    }
    return "";
  };
}

Validator Latency() {
  return [](const std::string &v, int) -> std::string {
    try {
      (void)LatencyModel::Parse(v);
      return "";
    } catch (const SimError &e) {
      return e.what();
    }
  };
}

struct KnownOption {
  unsigned levels;
  Validator check;  // null: any value
};

const std::map<std::string, KnownOption> &Known() {
  static const std::map<std::string, KnownOption> known = [] {
    std::map<std::string, KnownOption> m;
    const Validator bool01 = OneOf({"0", "1"});
    m["ge.graphRunMode"] = {kG | kS | kGr, bool01};
    m["ge.exec.deviceId"] = {kG, IntRange(-1, true)};
    m["ge.session_device_id"] = {kS, IntRange(0, true)};
    m["ge.exec.precision_mode"] = {kG | kS | kGr, OneOf({"force_fp16", "force_fp32", "cube_fp16in_fp32out",
                                                        "allow_mix_precision", "allow_fp32_to_fp16",
                                                        "must_keep_origin_dtype", "allow_mix_precision_fp16",
                                                        "allow_mix_precision_bf16", "allow_fp32_to_bf16"})};
    m["ge.exec.precision_mode_v2"] = {kG | kS | kGr, OneOf({"fp16", "origin", "cube_fp16in_fp32out", "mixed_float16",
                                                           "mixed_bfloat16", "cube_hif8", "mixed_hif8"})};
    m["ge.constLifecycle"] = {kG | kS | kGr, OneOf({"graph", "session"})};
    m["ge.featureBaseRefreshable"] = {kG | kS | kGr, bool01};
    m["ge.tiling_schedule_optimize"] = {kG | kS | kGr, OneOf({"", "0", "1"})};
    m["ge.aicoreNum"] = {kG | kS, AiCoreNum()};
    m["ge.exec.staticMemoryPolicy"] = {kG | kS, OneOf({"0", "1", "2", "3", "4"})};
    m["ge.enableSingleStream"] = {kG | kGr, OneOf({"true", "false"})};
    m["ge.jit_compile"] = {kG | kS, OneOf({"0", "1", "2"})};
    m["ge.deterministic"] = {kG | kS | kGr, bool01};
    m["ge.deterministicLevel"] = {kG | kS | kGr, OneOf({"0", "1", "2"})};
    m["ge.topoSortingMode"] = {kG | kS | kGr, OneOf({"0", "1", "2", "3"})};
    m["ge.oo.level"] = {kG | kS | kGr, OneOf({"O1", "O3"})};
    m["ge.AllowMultiGraphParallelCompile"] = {kG | kS, bool01};
    m["ge.graphMaxParallelModelNum"] = {kG | kS | kGr, IntRange(1, false, 2147483647)};
    m["ge.exec.frozenInputIndexes"] = {kL, Matches(R"((\d+([;,]\d+)*)?)", "input indexes separated by ';'")};
    m["ge.exec.hostInputIndexes"] = {kGr | kL, Matches(R"((\d+([;,]\d+)*)?)", "input indexes separated by ';'")};
    m["stream_sync_timeout"] = {kG | kS, IntRange(-1, false, 2147483647)};
    m["event_sync_timeout"] = {kG | kS, IntRange(-1, false, 2147483647)};
    // Simulator settings; a real GE only warns about them.
    m["gemesh.sim.timing"] = {kG | kS | kGr, bool01};
    m["gemesh.sim.latency_us"] = {kG | kS | kGr, Latency()};
    m["gemesh.sim.compile_ms"] = {kG | kS | kGr, Matches(R"(\d+(\.\d+)?)", "a non-negative number of milliseconds")};
    m["ge.graph_compiler_cache_dir"] = {kG | kS, nullptr};
    // Known keys whose values the simulator accepts as they are.
    for (const char *k : {"ge.exec.enableDump", "ge.exec.dumpPath", "ge.exec.dumpMode", "ge.exec.dumpData",
                          "ge.exec.dumpStep", "ge.exec.dumpLayer", "ge.exec.enableDumpDebug", "ge.exec.dumpDebugMode",
                          "ge.exec.profilingMode", "ge.exec.profilingOptions", "ge.op_compiler_cache_mode",
                          "ge.op_compiler_cache_dir", "ge.exec.modify_mixlist", "ge.customizeDtypes",
                          "ge.exec.disableReuseMemory", "ge.exec.reuseZeroCopyMemory", "ge.exec.memoryOptimizationPolicy",
                          "ge.externalWeight", "ge.externalWeightDir", "ge.exec.hostSchedulingMaxThreshold",
                          "ge.compile.h2dOverlappedWithCompute", "ge.socVersion", "ge.exec.opExecuteTimeout",
                          "ge.exec.graphExecTimeout"}) {
      m[k] = {kG | kS | kGr, nullptr};
    }
    for (const char *k : {"ge.exec.op_precision_mode", "ge.exec.enable_exception_dump"}) m[k] = {kG, nullptr};
    for (const char *k : {"ge.exec.atomicCleanPolicy"}) m[k] = {kS, nullptr};
    for (const char *k : {"ge.autoMultistreamParallelMode", "ge.inputShape", "ge.dynamicDims", "ge.dynamicNodeType"}) {
      m[k] = {kS | kGr, nullptr};
    }
    for (const char *k : {"ge.outputDatatype"}) m[k] = {kS | kGr, nullptr};
    for (const char *k : {"ge.graph_key", "ge.exec.static_model_ops_lower_limit", "ge.exec.inputReuseMemIndexes",
                          "ge.exec.outputReuseMemIndexes", "ge.exec.outputReuseInputMemIndexes"}) {
      m[k] = {kGr, nullptr};
    }
    return m;
  }();
  return known;
}

const char *LevelName(OptionLevel level) {
  switch (level) {
    case OptionLevel::kGlobal: return "global (GEInitialize)";
    case OptionLevel::kSession: return "session";
    case OptionLevel::kGraph: return "graph (AddGraph)";
    default: return "LoadGraph";
  }
}

unsigned LevelBit(OptionLevel level) {
  switch (level) {
    case OptionLevel::kGlobal: return kG;
    case OptionLevel::kSession: return kS;
    case OptionLevel::kGraph: return kGr;
    default: return kL;
  }
}

}  // namespace

OptionMap ToOptionMap(const std::map<ge::AscendString, ge::AscendString> &options) {
  OptionMap out;
  for (const auto &[k, v] : options) out[k.GetString()] = v.GetString();
  return out;
}

void CheckOptions(const OptionMap &options, OptionLevel level, int device_count) {
  for (const auto &[key, value] : options) {
    if (key.empty()) throw SimError("E10001: an option key is empty");
    const auto it = Known().find(key);
    if (it == Known().end()) {
      ReportWarning("W10001: option [" + key + "] is not a known GE option; it is ignored");
      continue;
    }
    if ((it->second.levels & LevelBit(level)) == 0) {
      if (level == OptionLevel::kLoad) {
        throw SimError("E10001: option [" + key + "] is not accepted by LoadGraph (only ge.exec.frozenInputIndexes and "
                       "ge.exec.hostInputIndexes are)");
      }
      ReportWarning("W10001: option [" + key + "] is not a " + std::string(LevelName(level)) + " option; it is ignored here");
      continue;
    }
    if (it->second.check) {
      const std::string reason = it->second.check(value, device_count);
      if (!reason.empty()) {
        throw SimError("E10001: Value [" + value + "] for parameter [" + key + "] is invalid. Reason: " + reason);
      }
    }
  }
}

void CheckPrecisionConflict(const OptionMap &merged) {
  if (merged.count("ge.exec.precision_mode") != 0 && merged.count("ge.exec.precision_mode_v2") != 0) {
    throw SimError("E10056: [ge.exec.precision_mode] and [ge.exec.precision_mode_v2] cannot both be set");
  }
}

CubePrecision PrecisionOf(std::initializer_list<const OptionMap *> maps) {
  constexpr FloatFormat k32 = FloatFormat::kFp32, k16 = FloatFormat::kFp16, kB16 = FloatFormat::kBf16;
  // Each mode as it applies to an fp32 graph's matrix ops (GE's precision_tuning.md):
  // MatMul, Gemm and Conv are on the mixed modes' reduce-precision list, and
  // allow_fp32_to_* prefer fp16 (matrix ops) but keep fp32 over bf16.
  static const std::map<std::string, CubePrecision> kModes = {
      {"fp16", {k16, k16}},
      {"force_fp16", {k16, k16}},
      {"mixed_float16", {k16, k16}},
      {"allow_mix_precision", {k16, k16}},
      {"allow_mix_precision_fp16", {k16, k16}},
      {"allow_fp32_to_fp16", {k16, k16}},
      {"cube_fp16in_fp32out", {k16, k32}},
      {"force_fp32", {k16, k32}},
      {"mixed_bfloat16", {kB16, kB16}},
      {"allow_mix_precision_bf16", {kB16, kB16}},
      {"origin", {k32, k32}},
      {"must_keep_origin_dtype", {k32, k32}},
      {"allow_fp32_to_bf16", {k32, k32}},
  };
  std::string mode;
  for (const OptionMap *m : maps) {
    if (m == nullptr) continue;
    // precision_mode is read before _v2 at each level, as GE's op engine does.
    for (const char *key : {"ge.exec.precision_mode", "ge.exec.precision_mode_v2"}) {
      const auto it = m->find(key);
      if (it != m->end()) {
        mode = it->second;
        break;
      }
    }
    if (!mode.empty()) break;
  }
  if (mode.empty()) {
    // GE's default: force_fp16 for inference; for training (a missing
    // ge.graphRunMode counts as training in the op engine) the original dtype.
    mode = Lookup(maps, "ge.graphRunMode", "1") == "0" ? "force_fp16" : "must_keep_origin_dtype";
  }
  const auto it = kModes.find(mode);
  if (it == kModes.end()) throw SimError("precision mode " + mode + " (hifloat8) is not emulated by the simulator");
  return it->second;
}

std::string Lookup(std::initializer_list<const OptionMap *> maps, const std::string &key, const std::string &fallback) {
  for (const OptionMap *m : maps) {
    if (m == nullptr) continue;
    const auto it = m->find(key);
    if (it != m->end()) return it->second;
  }
  return fallback;
}

}  // namespace gemesh::sim
