#include <string>
#include <vector>

#include "common/sim_errors.h"

namespace gemesh::sim {
namespace {
thread_local std::vector<std::string> t_errors;
thread_local std::vector<std::string> t_warnings;

std::string Drain(std::vector<std::string> &messages) {
  std::string out;
  for (const auto &m : messages) {
    if (!out.empty()) out += '\n';
    out += m;
  }
  messages.clear();
  return out;
}
}  // namespace

void ReportError(const std::string &message) { t_errors.push_back(message); }
void ReportWarning(const std::string &message) { t_warnings.push_back(message); }
std::string TakeErrors() { return Drain(t_errors); }
std::string TakeWarnings() { return Drain(t_warnings); }

}  // namespace gemesh::sim
