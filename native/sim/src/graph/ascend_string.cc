#include "graph/ascend_string.h"

#include <cstring>
#include <functional>

namespace ge {
namespace {
const std::string &Str(const std::shared_ptr<std::string> &p) {
  static const std::string empty;
  return p ? *p : empty;
}
}  // namespace

AscendString::AscendString(const char_t *const name) {
  if (name != nullptr) name_ = std::make_shared<std::string>(name);
}

AscendString::AscendString(const char_t *const name, size_t length) {
  if (name != nullptr) name_ = std::make_shared<std::string>(name, length);
}

const char_t *AscendString::GetString() const { return Str(name_).c_str(); }
size_t AscendString::GetLength() const { return Str(name_).size(); }
size_t AscendString::Find(const AscendString &s) const { return Str(name_).find(Str(s.name_)); }
size_t AscendString::Hash() const { return std::hash<std::string>()(Str(name_)); }
bool AscendString::operator<(const AscendString &d) const { return Str(name_) < Str(d.name_); }
bool AscendString::operator>(const AscendString &d) const { return Str(name_) > Str(d.name_); }
bool AscendString::operator<=(const AscendString &d) const { return Str(name_) <= Str(d.name_); }
bool AscendString::operator>=(const AscendString &d) const { return Str(name_) >= Str(d.name_); }
bool AscendString::operator==(const AscendString &d) const { return Str(name_) == Str(d.name_); }
bool AscendString::operator!=(const AscendString &d) const { return Str(name_) != Str(d.name_); }
bool AscendString::operator==(const char_t *const d) const { return d != nullptr && Str(name_) == d; }
bool AscendString::operator!=(const char_t *const d) const { return !(*this == d); }
}  // namespace ge
