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
/// no precision key is set at any level, precision_mode_v2=fp16: GE's own
/// inference default (force_fp16), which the GE backend runs at, made explicit.
Options SessionOptions(Options caller, const Options &global, const Options &graph, int32_t device);

/// The precision key GE applies to a model's graphs, as "key=value (level)" with
/// level graph, session or global (the caller's options, before SessionOptions),
/// or "ge.exec.precision_mode_v2=fp16 (default)" when none sets one.
std::string PrecisionInEffect(const Options &global, const Options &caller_session, const Options &graph);

std::map<ge::AscendString, ge::AscendString> ToGe(const Options &options);

}  // namespace gemesh

#endif  // GEMESH_BRIDGE_OPTIONS_H_
