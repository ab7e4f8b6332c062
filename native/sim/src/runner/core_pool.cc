#include "runner/core_pool.h"

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <list>
#include <map>
#include <memory>
#include <mutex>
#include <vector>

#include "common/sim_env.h"

namespace gemesh::sim {
namespace {

using Clock = std::chrono::steady_clock;
using Micros = std::chrono::duration<double, std::micro>;

// Work left below this (core·µs) counts as done: the clock's rounding, not work.
constexpr double kDoneCoreMicros = 1e-3;

struct Job {
  double remaining;  // core·µs
  double cap;        // cores, at most the pool's
  double rate{0};    // cores granted now
};

struct Pool {
  std::mutex mu;
  std::condition_variable cv;
  std::list<Job *> jobs;
  Clock::time_point last{Clock::now()};
  double cores{0};

  // Charges every job the work its granted cores did since the last change.
  void Advance(Clock::time_point now) {
    const double dt = Micros(now - last).count();
    for (Job *j : jobs) j->remaining -= j->rate * dt;
    last = now;
  }

  // Water-filling, lowest caps first.
  void Share() {
    std::vector<Job *> order(jobs.begin(), jobs.end());
    std::sort(order.begin(), order.end(), [](const Job *a, const Job *b) { return a->cap < b->cap; });
    double left = cores;
    for (size_t i = 0; i < order.size(); ++i) {
      const double share = left / static_cast<double>(order.size() - i);
      order[i]->rate = std::min(order[i]->cap, share);
      left -= order[i]->rate;
    }
  }
};

Pool &PoolOf(int device) {
  static std::mutex mu;
  static auto *pools = new std::map<int, std::unique_ptr<Pool>>();
  std::lock_guard<std::mutex> lock(mu);
  auto &p = (*pools)[device];
  if (!p) {
    p = std::make_unique<Pool>();
    p->cores = DeviceAiCores();
  }
  return *p;
}

}  // namespace

int DeviceAiCores() {
  static const int cores = static_cast<int>(std::min<int64_t>(EnvPositive("GEMESH_SIM_AICORES", 20), 4096));
  return cores;
}

void RunOnCores(int device, double core_us, double cap) {
  if (core_us <= 0) return;
  Pool &p = PoolOf(device);
  Job job{core_us, cap > 0 ? std::min(cap, p.cores) : p.cores};
  std::unique_lock<std::mutex> lock(p.mu);
  p.Advance(Clock::now());
  p.jobs.push_back(&job);
  p.Share();
  p.cv.notify_all();
  while (job.remaining > kDoneCoreMicros) {
    // Sleep until this job would finish at its present rate; a run entering or leaving wakes it earlier.
    const auto finish = p.last + std::chrono::duration_cast<Clock::duration>(Micros(job.remaining / job.rate));
    p.cv.wait_until(lock, finish);
    p.Advance(Clock::now());
  }
  p.jobs.remove(&job);
  p.Share();
  p.cv.notify_all();
}

}  // namespace gemesh::sim
