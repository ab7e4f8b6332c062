// The exported C functions: argument checks, then the Runtime/Model calls,
// with every failure turned into a status plus a thread-local message.
#include <mutex>

#include "errors.h"
#include "gemesh_bridge.h"
#include "model.h"
#include "runtime.h"

#ifndef GEMESH_BACKEND_NAME
#define GEMESH_BACKEND_NAME "unknown"
#endif

namespace gemesh {
namespace {

template <typename F>
gemesh_status Guard(F &&body) {
  ClearLastError();
  try {
    body();
    return GEMESH_OK;
  } catch (const BridgeError &e) {
    SetLastError(e.status(), e.what(), e.native_code());
    return e.status();
  } catch (const std::exception &e) {
    SetLastError(GEMESH_ERR_INTERNAL, std::string("internal error in the bridge: ") + e.what(), 0);
    return GEMESH_ERR_INTERNAL;
  } catch (...) {
    SetLastError(GEMESH_ERR_INTERNAL, "internal error in the bridge", 0);
    return GEMESH_ERR_INTERNAL;
  }
}

void FillInfo(const TensorSpec &spec, gemesh_tensor_info *out) {
  *out = gemesh_tensor_info{};
  out->dtype = spec.dtype;
  out->rank = static_cast<uint32_t>(spec.dims.size());
  for (size_t i = 0; i < spec.dims.size() && i < GEMESH_MAX_RANK; ++i) out->dims[i] = spec.dims[i];
  out->byte_size = spec.bytes;
}

void RequireOut(const void *p, const char *name) {
  if (p == nullptr) throw BridgeError(GEMESH_ERR_INVALID_ARGUMENT, std::string(name) + " is null");
}

}  // namespace
}  // namespace gemesh

using namespace gemesh;

extern "C" {

uint32_t gemesh_api_version(void) { return GEMESH_BRIDGE_API_VERSION; }

const char *gemesh_backend(void) { return GEMESH_BACKEND_NAME; }

const char *gemesh_last_error_message(void) { return ThreadLocalCopy(LastErrorMessage()); }

int64_t gemesh_last_error_native_code(void) { return LastErrorNativeCode(); }

gemesh_status gemesh_init(const gemesh_option *options, size_t option_count) {
  return Guard([&] {
    const Options caller = ReadOptions(options, option_count, "global options");
    std::lock_guard<std::mutex> lock(Runtime::Get().lifecycle());
    Runtime::Get().Init(caller);
  });
}

const char *gemesh_init_warnings(void) {
  std::lock_guard<std::mutex> lock(Runtime::Get().lifecycle());
  return ThreadLocalCopy(Runtime::Get().init_warnings());
}

gemesh_status gemesh_finalize(void) {
  return Guard([&] {
    std::lock_guard<std::mutex> lock(Runtime::Get().lifecycle());
    Runtime::Get().Finalize();
  });
}

gemesh_status gemesh_device_count(uint32_t *count) {
  return Guard([&] {
    RequireOut(count, "count");
    Runtime::Get().RequireInitialized();
    const aclError e = aclrtGetDeviceCount(count);
    if (e != ACL_SUCCESS) ThrowAcl(GEMESH_ERR_INIT, "aclrtGetDeviceCount failed", e);
  });
}

gemesh_status gemesh_device_memory(int32_t device_id, uint64_t *free_bytes, uint64_t *total_bytes) {
  return Guard([&] {
    RequireOut(free_bytes, "free_bytes");
    RequireOut(total_bytes, "total_bytes");
    if (device_id < 0) throw BridgeError(GEMESH_ERR_INVALID_ARGUMENT, "device_id must be >= 0");
    Runtime::Get().UseDevice(device_id);
    size_t free = 0, total = 0;
    const aclError e = aclrtGetMemInfo(ACL_HBM_MEM, &free, &total);
    if (e != ACL_SUCCESS) ThrowAcl(GEMESH_ERR_INIT, "aclrtGetMemInfo on device " + std::to_string(device_id) + " failed", e);
    *free_bytes = free;
    *total_bytes = total;
  });
}

gemesh_status gemesh_model_load(const gemesh_model_config *config, uint32_t *model_out) {
  return Guard([&] {
    RequireOut(config, "config");
    RequireOut(model_out, "model_out");
    *model_out = 0;
    std::lock_guard<std::mutex> lock(Runtime::Get().lifecycle());
    Runtime::Get().RequireInitialized();
    auto model = Model::Load(*config, Runtime::Get().global_options());
    *model_out = Runtime::Get().Register(std::move(model));
  });
}

const char *gemesh_model_warnings(uint32_t model) {
  std::string text;
  const gemesh_status s = Guard([&] { text = Runtime::Get().Find(model)->warnings(); });
  return s == GEMESH_OK ? ThreadLocalCopy(text) : ThreadLocalCopy("");
}

const char *gemesh_model_precision(uint32_t model) {
  std::string text;
  const gemesh_status s = Guard([&] { text = Runtime::Get().Find(model)->precision(); });
  return s == GEMESH_OK ? ThreadLocalCopy(text) : ThreadLocalCopy("");
}

gemesh_status gemesh_model_session_loads(uint32_t model, uint32_t *loads) {
  return Guard([&] {
    RequireOut(loads, "loads");
    std::lock_guard<std::mutex> lock(Runtime::Get().lifecycle());  // loads join and leave under it
    *loads = Runtime::Get().Find(model)->session_loads();
  });
}

gemesh_status gemesh_model_counts(uint32_t model, uint32_t *tier_count, uint32_t *stream_count, uint32_t *input_count,
                                  uint32_t *output_count) {
  return Guard([&] {
    const auto m = Runtime::Get().Find(model);
    if (tier_count != nullptr) *tier_count = m->tier_count();
    if (stream_count != nullptr) *stream_count = m->stream_count();
    if (input_count != nullptr) *input_count = m->input_count();
    if (output_count != nullptr) *output_count = m->output_count();
  });
}

gemesh_status gemesh_model_input_info(uint32_t model, uint32_t tier, uint32_t index, gemesh_tensor_info *out) {
  return Guard([&] {
    RequireOut(out, "out");
    FillInfo(Runtime::Get().Find(model)->input(tier, index), out);
  });
}

gemesh_status gemesh_model_output_info(uint32_t model, uint32_t tier, uint32_t index, gemesh_tensor_info *out) {
  return Guard([&] {
    RequireOut(out, "out");
    FillInfo(Runtime::Get().Find(model)->output(tier, index), out);
  });
}

gemesh_status gemesh_model_run(uint32_t model, uint32_t stream, uint32_t tier, const void *const *inputs,
                               const size_t *input_sizes, uint32_t input_count, void *const *outputs,
                               const size_t *output_sizes, uint32_t output_count) {
  return Guard([&] {
    Runtime::Get().Find(model)->Run(stream, tier, inputs, input_sizes, input_count, outputs, output_sizes, output_count);
  });
}

gemesh_status gemesh_model_destroy(uint32_t model) {
  return Guard([&] {
    std::lock_guard<std::mutex> lock(Runtime::Get().lifecycle());
    Runtime::Get().Unregister(model)->Destroy();
  });
}

}  // extern "C"
