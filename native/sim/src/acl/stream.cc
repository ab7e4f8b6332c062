#include "acl/stream.h"

#include <utility>

namespace gemesh::sim {

Stream::Stream(int device) : device_(device), thread_([this] { Loop(); }) {}

Stream::~Stream() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  work_cv_.notify_all();
  thread_.join();
}

void Stream::Push(StreamTask task) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    queue_.push_back(std::move(task));
  }
  work_cv_.notify_one();
}

aclError Stream::Synchronize(std::string *message) {
  std::unique_lock<std::mutex> lock(mu_);
  idle_cv_.wait(lock, [this] { return queue_.empty() && !busy_; });
  const aclError err = error_;
  if (message != nullptr) *message = error_message_;
  error_ = ACL_SUCCESS;
  error_message_.clear();
  return err;
}

bool Stream::Idle() {
  std::lock_guard<std::mutex> lock(mu_);
  return queue_.empty() && !busy_;
}

void Stream::Loop() {
  std::unique_lock<std::mutex> lock(mu_);
  for (;;) {
    // Drain the queue before honouring stop, so destroying a stream finishes its work.
    work_cv_.wait(lock, [this] { return stop_ || !queue_.empty(); });
    if (queue_.empty()) return;
    StreamTask task = std::move(queue_.front());
    queue_.pop_front();
    const bool skip = error_ != ACL_SUCCESS;
    busy_ = true;
    lock.unlock();
    std::string message;
    const aclError err = skip ? ACL_SUCCESS : task(&message);
    task = nullptr;
    lock.lock();
    busy_ = false;
    if (err != ACL_SUCCESS && error_ == ACL_SUCCESS) {
      error_ = err;
      error_message_ = std::move(message);
    }
    if (queue_.empty()) idle_cv_.notify_all();
  }
}

}  // namespace gemesh::sim
