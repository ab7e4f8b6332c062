// CANN simulator: ge::AscendString, the ABI-neutral string GE's option maps use.
#ifndef GEMESH_SIM_GRAPH_ASCEND_STRING_H_
#define GEMESH_SIM_GRAPH_ASCEND_STRING_H_

#include <functional>
#include <memory>
#include <string>

#include "graph/types.h"

namespace ge {
class GE_FUNC_VISIBILITY AscendString {
 public:
  AscendString() = default;
  ~AscendString() = default;
  AscendString(const char_t *const name);
  AscendString(const char_t *const name, size_t length);

  const char_t *GetString() const;
  size_t GetLength() const;
  size_t Find(const AscendString &ascend_string) const;
  size_t Hash() const;

  bool operator<(const AscendString &d) const;
  bool operator>(const AscendString &d) const;
  bool operator<=(const AscendString &d) const;
  bool operator>=(const AscendString &d) const;
  bool operator==(const AscendString &d) const;
  bool operator!=(const AscendString &d) const;
  bool operator==(const char_t *const d) const;
  bool operator!=(const char_t *const d) const;

 private:
  std::shared_ptr<std::string> name_;
};
}  // namespace ge

namespace std {
template <>
struct hash<ge::AscendString> {
  size_t operator()(const ge::AscendString &name) const { return name.Hash(); }
};
}  // namespace std

#endif  // GEMESH_SIM_GRAPH_ASCEND_STRING_H_
