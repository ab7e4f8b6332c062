#include "runtime.h"

#include <iterator>

#include "errors.h"
#include "ge/ge_api.h"
#include "model.h"
#include "shared_session.h"

namespace gemesh {

Runtime &Runtime::Get() {
  static Runtime *runtime = new Runtime();  // never destroyed: worker threads may outlive static teardown
  return *runtime;
}

void Runtime::Init(const Options &caller_options) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (init_count_ > 0) {
      ++init_count_;
      return;
    }
  }
  const Options options = GlobalOptions(caller_options);
  (void)TakeGeError();
  (void)TakeGeWarnings();
  (void)TakeAclError();
  const aclError acl = aclInit(nullptr);
  if (acl != ACL_SUCCESS && acl != ACL_ERROR_REPEAT_INITIALIZE) ThrowAcl(GEMESH_ERR_INIT, "aclInit failed", acl);
  const ge::Status status = ge::GEInitialize(ToGe(options));
  if (status != ge::SUCCESS) {
    try {
      ThrowGe(GEMESH_ERR_INIT, "GEInitialize failed", status);
    } catch (...) {
      (void)aclFinalize();
      throw;
    }
  }
  std::lock_guard<std::mutex> lock(mu_);
  init_warnings_ = TakeGeWarnings();
  global_options_ = options;
  init_count_ = 1;
}

void Runtime::Finalize() {
  std::map<int32_t, aclrtContext> contexts;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (init_count_ == 0) throw BridgeError(GEMESH_ERR_STATE, "gemesh_finalize: the bridge is not initialized");
    if (init_count_ > 1) {
      --init_count_;
      return;
    }
    if (!models_.empty()) {
      throw BridgeError(GEMESH_ERR_STATE, "gemesh_finalize: " + std::to_string(models_.size()) +
                                              " model(s) are still loaded; destroy them first");
    }
    init_count_ = 0;
    contexts.swap(contexts_);
    global_options_.clear();
    init_warnings_.clear();
  }
  // Reverse of init: GE first, then the devices, then AscendCL.
  std::string failures;
  const ge::Status status = ge::GEFinalize();
  if (status != ge::SUCCESS) failures += "GEFinalize returned " + std::to_string(status) + " " + TakeGeError() + "; ";
  for (const auto &[device, ctx] : contexts) {
    const aclError e = aclrtResetDevice(device);
    if (e != ACL_SUCCESS) failures += "aclrtResetDevice(" + std::to_string(device) + ") returned " + std::to_string(e) + "; ";
  }
  const aclError e = aclFinalize();
  if (e != ACL_SUCCESS && e != ACL_ERROR_REPEAT_FINALIZE) failures += "aclFinalize returned " + std::to_string(e) + " " + TakeAclError();
  if (!failures.empty()) throw BridgeError(GEMESH_ERR_INIT, "gemesh_finalize: " + failures);
}

uint32_t Runtime::ReserveGraphIds(uint32_t count) {
  std::lock_guard<std::mutex> lock(mu_);
  const uint32_t base = next_graph_id_;
  next_graph_id_ += count;
  return base;
}

void Runtime::RequireInitialized() {
  std::lock_guard<std::mutex> lock(mu_);
  if (init_count_ == 0) throw BridgeError(GEMESH_ERR_STATE, "the bridge is not initialized (call gemesh_init first)");
}

aclrtContext Runtime::UseDevice(int32_t device) {
  std::lock_guard<std::mutex> lock(mu_);
  if (init_count_ == 0) throw BridgeError(GEMESH_ERR_STATE, "the bridge is not initialized (call gemesh_init first)");
  const auto it = contexts_.find(device);
  if (it != contexts_.end()) {
    const aclError e = aclrtSetCurrentContext(it->second);
    if (e != ACL_SUCCESS) ThrowAcl(GEMESH_ERR_EXECUTE, "aclrtSetCurrentContext for device " + std::to_string(device) + " failed", e);
    return it->second;
  }
  aclError e = aclrtSetDevice(device);
  if (e != ACL_SUCCESS) ThrowAcl(GEMESH_ERR_INIT, "aclrtSetDevice(" + std::to_string(device) + ") failed", e);
  aclrtContext ctx = nullptr;
  e = aclrtGetCurrentContext(&ctx);
  if (e != ACL_SUCCESS) ThrowAcl(GEMESH_ERR_INIT, "aclrtGetCurrentContext for device " + std::to_string(device) + " failed", e);
  contexts_[device] = ctx;
  return ctx;
}

std::shared_ptr<SharedSession> Runtime::FindSession(const std::string &key) {
  // Drop the entries whose last load has gone.
  for (auto it = sessions_.begin(); it != sessions_.end();) it = it->second.expired() ? sessions_.erase(it) : std::next(it);
  const auto it = sessions_.find(key);
  return it == sessions_.end() ? nullptr : it->second.lock();
}

void Runtime::ShareSession(const std::string &key, const std::shared_ptr<SharedSession> &session) {
  sessions_[key] = session;
}

uint32_t Runtime::Register(std::shared_ptr<Model> model) {
  std::lock_guard<std::mutex> lock(mu_);
  const uint32_t id = next_model_++;
  models_[id] = std::move(model);
  return id;
}

std::shared_ptr<Model> Runtime::Find(uint32_t id) {
  std::lock_guard<std::mutex> lock(mu_);
  const auto it = models_.find(id);
  if (it == models_.end()) throw BridgeError(GEMESH_ERR_STATE, "model " + std::to_string(id) + " is not loaded");
  return it->second;
}

std::shared_ptr<Model> Runtime::Unregister(uint32_t id) {
  std::lock_guard<std::mutex> lock(mu_);
  const auto it = models_.find(id);
  if (it == models_.end()) throw BridgeError(GEMESH_ERR_STATE, "model " + std::to_string(id) + " is not loaded");
  auto model = it->second;
  models_.erase(it);
  return model;
}

}  // namespace gemesh
