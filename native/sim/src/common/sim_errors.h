// Per-thread GE message buffers (liberror_manager.so), shared by the parser and
// the runner the way CANN's error manager is: GEGetErrorMsgV2() /
// GEGetWarningMsgV2() read and clear what the calling thread reported.
#ifndef GEMESH_SIM_COMMON_SIM_ERRORS_H_
#define GEMESH_SIM_COMMON_SIM_ERRORS_H_

#include <stdexcept>
#include <string>

namespace gemesh::sim {

void ReportError(const std::string &message);
void ReportWarning(const std::string &message);
/// All messages reported on this thread since the last take, oldest first, one per line.
std::string TakeErrors();
std::string TakeWarnings();

/// Thrown inside the simulator and turned into a status + reported message at the API edge.
class SimError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

}  // namespace gemesh::sim

#endif  // GEMESH_SIM_COMMON_SIM_ERRORS_H_
