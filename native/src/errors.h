// The bridge's error reporting: a thread-local (status, message, native code)
// for gemesh_last_error_*, and helpers that capture GE's and ACL's messages
// inside the failing call (both are read-and-clear and per thread).
#ifndef GEMESH_BRIDGE_ERRORS_H_
#define GEMESH_BRIDGE_ERRORS_H_

#include <cstdint>
#include <stdexcept>
#include <string>

#include "gemesh_bridge.h"

namespace gemesh {

/// Thrown inside the bridge; the C entry points turn it into a status.
class BridgeError : public std::runtime_error {
 public:
  BridgeError(gemesh_status status, const std::string &message, int64_t native_code = 0)
      : std::runtime_error(message), status_(status), native_code_(native_code) {}
  gemesh_status status() const { return status_; }
  int64_t native_code() const { return native_code_; }

 private:
  gemesh_status status_;
  int64_t native_code_;
};

/// Pending GE error text of this thread ("" if none); clears it.
std::string TakeGeError();
/// Pending GE warning text of this thread ("" if none); clears it.
std::string TakeGeWarnings();
/// Pending ACL error text of this thread ("" if none); clears it.
std::string TakeAclError();

/// A failed GE call: message = what + status + GE's and ACL's texts.
[[noreturn]] void ThrowGe(gemesh_status status, const std::string &what, uint32_t ge_status);
/// A failed ACL call: message = what + error code + ACL's (and GE's) texts.
[[noreturn]] void ThrowAcl(gemesh_status status, const std::string &what, int acl_error);

/// Records the outcome of an entry point in the thread-local slot.
void SetLastError(gemesh_status status, const std::string &message, int64_t native_code);
void ClearLastError();
const std::string &LastErrorMessage();
int64_t LastErrorNativeCode();

/// Thread-local storage for strings handed out as const char *.
const char *ThreadLocalCopy(const std::string &s);

}  // namespace gemesh

#endif  // GEMESH_BRIDGE_ERRORS_H_
