// A simulated device stream: one thread running queued tasks in FIFO order,
// like an NPU stream. The first failing task puts the stream in an error
// state: later tasks are skipped until a synchronize reports and clears it.
#ifndef GEMESH_SIM_ACL_STREAM_H_
#define GEMESH_SIM_ACL_STREAM_H_

#include <condition_variable>
#include <deque>
#include <mutex>
#include <string>
#include <thread>

#include "common/sim_runtime.h"

namespace gemesh::sim {

class Stream {
 public:
  explicit Stream(int device);
  ~Stream();
  Stream(const Stream &) = delete;
  Stream &operator=(const Stream &) = delete;

  int device() const { return device_; }
  void Push(StreamTask task);
  /// Waits until every queued task has run; returns (and clears) the stream's error.
  aclError Synchronize(std::string *message);
  bool Idle();

 private:
  void Loop();

  const int device_;
  std::mutex mu_;
  std::condition_variable work_cv_;
  std::condition_variable idle_cv_;
  std::deque<StreamTask> queue_;
  bool busy_{false};
  bool stop_{false};
  aclError error_{ACL_SUCCESS};
  std::string error_message_;
  std::thread thread_;
};

}  // namespace gemesh::sim

#endif  // GEMESH_SIM_ACL_STREAM_H_
