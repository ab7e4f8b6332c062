// Process-wide bridge state: the init reference count, GE's global options,
// one ACL context per device, and the registry of loaded models.
#ifndef GEMESH_BRIDGE_RUNTIME_H_
#define GEMESH_BRIDGE_RUNTIME_H_

#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>

#include "acl/acl.h"
#include "options.h"

namespace gemesh {

class Model;
struct SharedSession;

class Runtime {
 public:
  static Runtime &Get();

  /// Serialises init, finalize, load and destroy (GE creates sessions and
  /// parses models one at a time; Triton's backend does the same).
  std::mutex &lifecycle() { return lifecycle_; }

  // Callers hold lifecycle().
  void Init(const Options &caller_options);
  void Finalize();
  const Options &global_options() const { return global_options_; }
  const std::string &init_warnings() const { return init_warnings_; }
  /// First graph id of a block of `count` ids, unique in the process.
  uint32_t ReserveGraphIds(uint32_t count);

  /// Throws STATE unless initialised. Any thread.
  void RequireInitialized();
  /// The device's default context, made current on the calling thread
  /// (aclrtSetDevice the first time, aclrtSetCurrentContext after). Any thread.
  aclrtContext UseDevice(int32_t device);

  /// The live session shared under `key`, or null. Callers hold lifecycle().
  std::shared_ptr<SharedSession> FindSession(const std::string &key);
  /// Shares `session` under `key` for as long as a load holds it. Callers hold lifecycle().
  void ShareSession(const std::string &key, const std::shared_ptr<SharedSession> &session);

  uint32_t Register(std::shared_ptr<Model> model);
  std::shared_ptr<Model> Find(uint32_t id);
  std::shared_ptr<Model> Unregister(uint32_t id);

 private:
  std::mutex lifecycle_;
  std::mutex mu_;  // guards everything below
  int init_count_{0};
  Options global_options_;
  std::string init_warnings_;
  std::map<int32_t, aclrtContext> contexts_;
  std::map<uint32_t, std::shared_ptr<Model>> models_;
  std::map<std::string, std::weak_ptr<SharedSession>> sessions_;  // guarded by lifecycle_
  uint32_t next_model_{1};
  uint32_t next_graph_id_{1};
};

}  // namespace gemesh

#endif  // GEMESH_BRIDGE_RUNTIME_H_
