// Simulator settings read from the environment (documented in native/README.md).
#ifndef GEMESH_SIM_COMMON_SIM_ENV_H_
#define GEMESH_SIM_COMMON_SIM_ENV_H_

#include <cstdint>
#include <cstdlib>
#include <string>

namespace gemesh::sim {

inline std::string EnvString(const char *name, const char *fallback) {
  const char *v = std::getenv(name);
  return (v != nullptr && *v != '\0') ? std::string(v) : std::string(fallback);
}

/// A positive integer from the environment, or fallback when unset or malformed.
inline int64_t EnvPositive(const char *name, int64_t fallback) {
  const char *v = std::getenv(name);
  if (v == nullptr || *v == '\0') return fallback;
  char *end = nullptr;
  const long long n = std::strtoll(v, &end, 10);
  return (end != nullptr && *end == '\0' && n > 0) ? static_cast<int64_t>(n) : fallback;
}

}  // namespace gemesh::sim

#endif  // GEMESH_SIM_COMMON_SIM_ENV_H_
