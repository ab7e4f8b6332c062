// GE option checking as the simulator does it: a key GE does not know only
// produces a warning; a known key with a bad value is an error naming the key.
#ifndef GEMESH_SIM_RUNNER_OPTIONS_H_
#define GEMESH_SIM_RUNNER_OPTIONS_H_

#include <map>
#include <string>

#include "graph/ascend_string.h"
#include "ops/kernel.h"

namespace gemesh::sim {

using OptionMap = std::map<std::string, std::string>;

enum class OptionLevel { kGlobal, kSession, kGraph, kLoad };

OptionMap ToOptionMap(const std::map<ge::AscendString, ge::AscendString> &options);

/// Throws SimError on an empty key or a bad value of a known key; reports a
/// warning (GEGetWarningMsgV2) for unknown keys and keys of another level.
void CheckOptions(const OptionMap &options, OptionLevel level, int device_count);

/// Fails when the merged options set both precision keys (GE's E10056).
void CheckPrecisionConflict(const OptionMap &merged);

/// What the precision mode in effect (graph > session > global, most specific
/// first in `maps`) does to the matrix ops; throws SimError for a mode the
/// simulator does not emulate (hifloat8).
CubePrecision PrecisionOf(std::initializer_list<const OptionMap *> maps);

/// Value of key in the first map that has it (most specific first), or fallback.
std::string Lookup(std::initializer_list<const OptionMap *> maps, const std::string &key, const std::string &fallback);

}  // namespace gemesh::sim

#endif  // GEMESH_SIM_RUNNER_OPTIONS_H_
