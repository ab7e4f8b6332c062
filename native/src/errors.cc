#include "errors.h"

#include "acl/acl.h"
#include "ge/ge_api.h"

namespace gemesh {
namespace {
thread_local std::string t_message;
thread_local int64_t t_native_code = 0;
thread_local std::string t_returned;

// Trims trailing newlines so messages join cleanly.
std::string Trim(std::string s) {
  while (!s.empty() && (s.back() == '\n' || s.back() == '\r' || s.back() == ' ')) s.pop_back();
  return s;
}

std::string Details() {
  std::string out;
  const std::string ge = TakeGeError();
  const std::string acl = TakeAclError();
  if (!ge.empty()) out += "; GE: " + ge;
  if (!acl.empty()) out += "; ACL: " + acl;
  return out;
}
}  // namespace

std::string TakeGeError() {
  const ge::AscendString msg = ge::GEGetErrorMsgV2();
  return Trim(msg.GetString() == nullptr ? "" : msg.GetString());
}

std::string TakeGeWarnings() {
  const ge::AscendString msg = ge::GEGetWarningMsgV2();
  return Trim(msg.GetString() == nullptr ? "" : msg.GetString());
}

std::string TakeAclError() {
  const char *msg = aclGetRecentErrMsg();
  return Trim(msg == nullptr ? "" : msg);
}

void ThrowGe(gemesh_status status, const std::string &what, uint32_t ge_status) {
  throw BridgeError(status, what + " (GE status " + std::to_string(ge_status) + ")" + Details(), ge_status);
}

void ThrowAcl(gemesh_status status, const std::string &what, int acl_error) {
  throw BridgeError(status, what + " (ACL error " + std::to_string(acl_error) + ")" + Details(), acl_error);
}

void SetLastError(gemesh_status status, const std::string &message, int64_t native_code) {
  (void)status;
  t_message = message;
  t_native_code = native_code;
}

void ClearLastError() {
  t_message.clear();
  t_native_code = 0;
}

const std::string &LastErrorMessage() { return t_message; }
int64_t LastErrorNativeCode() { return t_native_code; }

const char *ThreadLocalCopy(const std::string &s) {
  t_returned = s;
  return t_returned.c_str();
}

}  // namespace gemesh
