// GE option maps built from the C ABI's option arrays, plus the options the
// bridge always sets (inference run mode, explicit precision, device binding).
#ifndef GEMESH_BRIDGE_OPTIONS_H_
#define GEMESH_BRIDGE_OPTIONS_H_

#include <map>
#include <string>

#include "gemesh_bridge.h"
#include "graph/ascend_string.h"

namespace gemesh {

using Options = std::map<std::string, std::string>;

/// Copies an option array; throws INVALID_ARGUMENT for null keys/values or repeated keys.
Options ReadOptions(const gemesh_option *options, size_t count, const char *what);

/// Global options for GEInitialize: the caller's plus ge.graphRunMode=0.
Options GlobalOptions(Options caller);

/// Session options: the caller's plus device, run mode, const sharing and, when
/// no precision key is set at any level, precision_mode_v2=origin (GE's
/// inference default would otherwise be force_fp16).
Options SessionOptions(Options caller, const Options &global, const Options &graph, int32_t device);

std::map<ge::AscendString, ge::AscendString> ToGe(const Options &options);

}  // namespace gemesh

#endif  // GEMESH_BRIDGE_OPTIONS_H_
