// The simulated AscendCL runtime: devices with a fixed HBM capacity, one
// default context per device, streams, device memory and copies. "Device"
// memory is host memory that is tracked per device, so copies and kernels are
// real while capacity and address checks behave as on an NPU.
#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <future>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <sstream>
#include <string>
#include <unordered_map>
#include <vector>

#include "acl/acl.h"
#include "acl/stream.h"
#include "common/sim_env.h"
#include "common/sim_runtime.h"

namespace gemesh::sim {
namespace {

constexpr int kMaxDevices = 64;
constexpr size_t kAlign = 32;
// Addresses handed out for memory without backing: non-canonical on x86-64, so
// they can never collide with (or be mistaken for) real host pointers.
constexpr uintptr_t kVirtualBase = uintptr_t{1} << 56;

struct Context {
  int device;
};

struct Allocation {
  size_t size;     // bytes requested
  size_t charged;  // bytes counted against HBM
  int device;
  bool backed;
};

struct DeviceState {
  size_t capacity{0};
  size_t used{0};
  int set_count{0};
};

struct Runtime {
  std::mutex mu;
  bool initialized{false};
  int device_count{0};
  DeviceState devices[kMaxDevices];
  // Contexts live as long as the process so a stale handle is still recognisable.
  Context contexts[kMaxDevices];
  std::map<uintptr_t, Allocation> allocations;  // by base address
  std::unordered_map<void *, std::shared_ptr<Stream>> streams;
  std::set<void *> pinned;
  uintptr_t next_virtual{kVirtualBase};

  Runtime() {
    for (int i = 0; i < kMaxDevices; ++i) contexts[i].device = i;
  }
};

Runtime &R() {
  static Runtime *runtime = new Runtime();  // never destroyed: stream threads may outlive static teardown
  return *runtime;
}

thread_local Context *t_context = nullptr;
thread_local std::vector<std::string> t_acl_messages;
thread_local std::string t_acl_returned;

size_t RoundUp(size_t n, size_t a) { return (n + a - 1) / a * a; }
size_t Charge(size_t bytes) { return RoundUp(bytes, kAlign) + kAlign; }

aclError Fail(aclError code, const std::string &message) {
  ReportAclError(message);
  return code;
}

std::string Mib(size_t bytes) {
  std::ostringstream os;
  os << (bytes / (1024.0 * 1024.0)) << " MiB";
  return os.str();
}

// Caller holds R().mu.
const Allocation *FindLocked(const void *ptr, size_t bytes, uintptr_t *base) {
  Runtime &r = R();
  const auto p = reinterpret_cast<uintptr_t>(ptr);
  auto it = r.allocations.upper_bound(p);
  if (it == r.allocations.begin()) return nullptr;
  --it;
  if (p < it->first || p - it->first > it->second.size || bytes > it->second.size - (p - it->first)) return nullptr;
  if (base != nullptr) *base = it->first;
  return &it->second;
}

bool IsPinnedLocked(const void *ptr) { return R().pinned.count(const_cast<void *>(ptr)) != 0; }

std::shared_ptr<Stream> FindStream(aclrtStream stream) {
  Runtime &r = R();
  std::lock_guard<std::mutex> lock(r.mu);
  const auto it = r.streams.find(stream);
  return it == r.streams.end() ? nullptr : it->second;
}

// ACL calls that act on a device need an initialised runtime and a current context.
aclError RequireContext(const char *api, int *device) {
  Runtime &r = R();
  {
    std::lock_guard<std::mutex> lock(r.mu);
    if (!r.initialized) return Fail(ACL_ERROR_UNINITIALIZE, std::string(api) + ": AscendCL is not initialized (call aclInit first)");
  }
  if (t_context == nullptr) {
    return Fail(ACL_ERROR_RT_CONTEXT_NULL, std::string(api) +
                                                ": no current context on this thread (call aclrtSetDevice or "
                                                "aclrtSetCurrentContext first)");
  }
  *device = t_context->device;
  return ACL_SUCCESS;
}

aclError CheckCopy(const char *api, void *dst, size_t dest_max, const void *src, size_t count, aclrtMemcpyKind kind,
                   bool *host_pinned) {
  if (dst == nullptr || src == nullptr) return Fail(ACL_ERROR_INVALID_PARAM, std::string(api) + ": null address");
  if (count > dest_max) {
    return Fail(ACL_ERROR_INVALID_PARAM, std::string(api) + ": count " + std::to_string(count) +
                                             " exceeds the destination size " + std::to_string(dest_max));
  }
  Runtime &r = R();
  std::lock_guard<std::mutex> lock(r.mu);
  const bool dst_dev = kind == ACL_MEMCPY_HOST_TO_DEVICE || kind == ACL_MEMCPY_DEVICE_TO_DEVICE;
  const bool src_dev = kind == ACL_MEMCPY_DEVICE_TO_HOST || kind == ACL_MEMCPY_DEVICE_TO_DEVICE;
  if (kind > ACL_MEMCPY_DEVICE_TO_DEVICE) {
    return Fail(ACL_ERROR_INVALID_PARAM, std::string(api) + ": unsupported copy kind " + std::to_string(kind));
  }
  if (dst_dev) {
    const Allocation *a = FindLocked(dst, count, nullptr);
    if (a == nullptr || !a->backed) {
      return Fail(ACL_ERROR_RT_PARAM_INVALID,
                  std::string(api) + ": destination is not device memory of " + std::to_string(count) + " bytes");
    }
  } else if (FindLocked(dst, 1, nullptr) != nullptr) {
    return Fail(ACL_ERROR_RT_PARAM_INVALID, std::string(api) + ": destination is device memory but the copy kind says host");
  }
  if (src_dev) {
    const Allocation *a = FindLocked(src, count, nullptr);
    if (a == nullptr || !a->backed) {
      return Fail(ACL_ERROR_RT_PARAM_INVALID,
                  std::string(api) + ": source is not device memory of " + std::to_string(count) + " bytes");
    }
  } else if (FindLocked(src, 1, nullptr) != nullptr) {
    return Fail(ACL_ERROR_RT_PARAM_INVALID, std::string(api) + ": source is device memory but the copy kind says host");
  }
  if (host_pinned != nullptr) {
    *host_pinned = (kind == ACL_MEMCPY_HOST_TO_DEVICE && IsPinnedLocked(src)) ||
                   (kind == ACL_MEMCPY_DEVICE_TO_HOST && IsPinnedLocked(dst)) || kind == ACL_MEMCPY_DEVICE_TO_DEVICE;
  }
  return ACL_SUCCESS;
}

}  // namespace

void ReportAclError(const std::string &message) { t_acl_messages.push_back(message); }

int CurrentDevice() { return t_context == nullptr ? -1 : t_context->device; }

int StreamDevice(aclrtStream stream) {
  const auto s = FindStream(stream);
  return s ? s->device() : -1;
}

aclError DeviceAlloc(int device, size_t bytes, bool backed, void **ptr, std::string *error) {
  Runtime &r = R();
  std::lock_guard<std::mutex> lock(r.mu);
  if (device < 0 || device >= r.device_count) {
    if (error) *error = "invalid device id " + std::to_string(device);
    return ACL_ERROR_RT_INVALID_DEVICEID;
  }
  DeviceState &d = r.devices[device];
  const size_t charged = Charge(bytes);
  if (charged > d.capacity - d.used) {
    if (error) {
      *error = "out of device memory on device " + std::to_string(device) + ": requested " + std::to_string(bytes) +
               " bytes, " + Mib(d.capacity - d.used) + " free of " + Mib(d.capacity);
    }
    return ACL_ERROR_RT_MEMORY_ALLOCATION;
  }
  uintptr_t base = 0;
  if (backed) {
    void *p = std::aligned_alloc(64, RoundUp(std::max<size_t>(bytes, 1), 64));
    if (p == nullptr) {
      if (error) *error = "host memory behind the simulated device is exhausted";
      return ACL_ERROR_RT_MEMORY_ALLOCATION;
    }
    base = reinterpret_cast<uintptr_t>(p);
  } else {
    base = r.next_virtual;
    r.next_virtual += RoundUp(std::max<size_t>(bytes, 1), 4096) + 4096;
  }
  d.used += charged;
  r.allocations[base] = Allocation{bytes, charged, device, backed};
  *ptr = reinterpret_cast<void *>(base);
  return ACL_SUCCESS;
}

void DeviceFree(void *ptr) {
  Runtime &r = R();
  std::lock_guard<std::mutex> lock(r.mu);
  const auto it = r.allocations.find(reinterpret_cast<uintptr_t>(ptr));
  if (it == r.allocations.end()) return;
  r.devices[it->second.device].used -= it->second.charged;
  if (it->second.backed) std::free(ptr);
  r.allocations.erase(it);
}

bool DeviceRange(const void *ptr, size_t bytes, int *device) {
  Runtime &r = R();
  std::lock_guard<std::mutex> lock(r.mu);
  const Allocation *a = FindLocked(ptr, bytes, nullptr);
  if (a == nullptr) return false;
  if (device != nullptr) *device = a->device;
  return true;
}

aclError EnqueueOnStream(aclrtStream stream, StreamTask task) {
  const auto s = FindStream(stream);
  if (!s) return Fail(ACL_ERROR_INVALID_RESOURCE_HANDLE, "invalid stream handle");
  s->Push(std::move(task));
  return ACL_SUCCESS;
}

}  // namespace gemesh::sim

using namespace gemesh::sim;

extern "C" {

aclError aclInit(const char *configPath) {
  (void)configPath;  // dump/profiling/err_msg_mode settings have no simulated effect
  Runtime &r = R();
  std::lock_guard<std::mutex> lock(r.mu);
  if (r.initialized) return Fail(ACL_ERROR_REPEAT_INITIALIZE, "aclInit: AscendCL is already initialized");
  r.device_count = static_cast<int>(std::min<int64_t>(EnvPositive("GEMESH_SIM_DEVICES", 2), kMaxDevices));
  const size_t capacity = static_cast<size_t>(EnvPositive("GEMESH_SIM_HBM_MB", 4096)) * 1024 * 1024;
  for (int i = 0; i < r.device_count; ++i) r.devices[i].capacity = std::max(capacity, r.devices[i].used);
  r.initialized = true;
  return ACL_SUCCESS;
}

aclError aclFinalize() {
  Runtime &r = R();
  std::lock_guard<std::mutex> lock(r.mu);
  if (!r.initialized) return Fail(ACL_ERROR_REPEAT_FINALIZE, "aclFinalize: AscendCL is not initialized");
  r.initialized = false;
  for (int i = 0; i < r.device_count; ++i) r.devices[i].set_count = 0;
  t_context = nullptr;
  return ACL_SUCCESS;
}

const char *aclGetRecentErrMsg() {
  if (t_acl_messages.empty()) return nullptr;
  t_acl_returned.clear();
  for (auto it = t_acl_messages.rbegin(); it != t_acl_messages.rend(); ++it) {
    if (!t_acl_returned.empty()) t_acl_returned += '\n';
    t_acl_returned += *it;
  }
  t_acl_messages.clear();
  return t_acl_returned.c_str();
}

aclError aclrtSetDevice(int32_t deviceId) {
  Runtime &r = R();
  std::lock_guard<std::mutex> lock(r.mu);
  if (!r.initialized) return Fail(ACL_ERROR_UNINITIALIZE, "aclrtSetDevice: AscendCL is not initialized (call aclInit first)");
  if (deviceId < 0 || deviceId >= r.device_count) {
    return Fail(ACL_ERROR_RT_INVALID_DEVICEID, "aclrtSetDevice: device " + std::to_string(deviceId) +
                                                   " does not exist (" + std::to_string(r.device_count) +
                                                   " simulated devices)");
  }
  r.devices[deviceId].set_count++;
  t_context = &r.contexts[deviceId];
  return ACL_SUCCESS;
}

aclError aclrtResetDevice(int32_t deviceId) {
  Runtime &r = R();
  std::lock_guard<std::mutex> lock(r.mu);
  if (deviceId < 0 || deviceId >= r.device_count || r.devices[deviceId].set_count == 0) {
    return Fail(ACL_ERROR_RT_INVALID_DEVICEID, "aclrtResetDevice: device " + std::to_string(deviceId) + " is not set");
  }
  if (--r.devices[deviceId].set_count == 0 && t_context == &r.contexts[deviceId]) t_context = nullptr;
  return ACL_SUCCESS;
}

aclError aclrtGetDevice(int32_t *deviceId) {
  if (deviceId == nullptr) return Fail(ACL_ERROR_INVALID_PARAM, "aclrtGetDevice: deviceId is null");
  if (t_context == nullptr) return Fail(ACL_ERROR_RT_CONTEXT_NULL, "aclrtGetDevice: no current context on this thread");
  *deviceId = t_context->device;
  return ACL_SUCCESS;
}

aclError aclrtGetDeviceCount(uint32_t *count) {
  if (count == nullptr) return Fail(ACL_ERROR_INVALID_PARAM, "aclrtGetDeviceCount: count is null");
  Runtime &r = R();
  std::lock_guard<std::mutex> lock(r.mu);
  if (!r.initialized) return Fail(ACL_ERROR_UNINITIALIZE, "aclrtGetDeviceCount: AscendCL is not initialized");
  *count = static_cast<uint32_t>(r.device_count);
  return ACL_SUCCESS;
}

aclError aclrtSetCurrentContext(aclrtContext context) {
  Runtime &r = R();
  auto *c = static_cast<Context *>(context);
  if (c < &r.contexts[0] || c >= &r.contexts[kMaxDevices]) {
    return Fail(ACL_ERROR_INVALID_RESOURCE_HANDLE, "aclrtSetCurrentContext: invalid context handle");
  }
  std::lock_guard<std::mutex> lock(r.mu);
  if (!r.initialized || r.devices[c->device].set_count == 0) {
    return Fail(ACL_ERROR_RT_CONTEXT_NULL, "aclrtSetCurrentContext: the context's device " + std::to_string(c->device) +
                                               " has been reset");
  }
  t_context = c;
  return ACL_SUCCESS;
}

aclError aclrtGetCurrentContext(aclrtContext *context) {
  if (context == nullptr) return Fail(ACL_ERROR_INVALID_PARAM, "aclrtGetCurrentContext: context is null");
  if (t_context == nullptr) return Fail(ACL_ERROR_RT_CONTEXT_NULL, "aclrtGetCurrentContext: no current context on this thread");
  *context = t_context;
  return ACL_SUCCESS;
}

aclError aclrtCreateStream(aclrtStream *stream) {
  if (stream == nullptr) return Fail(ACL_ERROR_INVALID_PARAM, "aclrtCreateStream: stream is null");
  int device = -1;
  if (const aclError e = RequireContext("aclrtCreateStream", &device); e != ACL_SUCCESS) return e;
  auto s = std::make_shared<Stream>(device);
  Runtime &r = R();
  std::lock_guard<std::mutex> lock(r.mu);
  r.streams[s.get()] = s;
  *stream = s.get();
  return ACL_SUCCESS;
}

aclError aclrtDestroyStream(aclrtStream stream) {
  std::shared_ptr<Stream> s;
  {
    Runtime &r = R();
    std::lock_guard<std::mutex> lock(r.mu);
    const auto it = r.streams.find(stream);
    if (it == r.streams.end()) return Fail(ACL_ERROR_INVALID_RESOURCE_HANDLE, "aclrtDestroyStream: invalid stream handle");
    s = it->second;
    r.streams.erase(it);
  }
  s.reset();  // the destructor finishes queued work and joins the thread
  return ACL_SUCCESS;
}

aclError aclrtSynchronizeStream(aclrtStream stream) {
  const auto s = FindStream(stream);
  if (!s) return Fail(ACL_ERROR_INVALID_RESOURCE_HANDLE, "aclrtSynchronizeStream: invalid stream handle");
  if (t_context == nullptr) return Fail(ACL_ERROR_RT_CONTEXT_NULL, "aclrtSynchronizeStream: no current context on this thread");
  if (t_context->device != s->device()) {
    return Fail(ACL_ERROR_RT_STREAM_CONTEXT, "aclrtSynchronizeStream: the stream belongs to device " +
                                                 std::to_string(s->device()) + ", not to the current context's device " +
                                                 std::to_string(t_context->device));
  }
  std::string message;
  const aclError err = s->Synchronize(&message);
  if (err != ACL_SUCCESS) ReportAclError(message.empty() ? "a task on the stream failed" : message);
  return err;
}

aclError aclrtStreamQuery(aclrtStream stream, aclrtStreamStatus *status) {
  const auto s = FindStream(stream);
  if (!s || status == nullptr) return Fail(ACL_ERROR_INVALID_PARAM, "aclrtStreamQuery: invalid stream or status");
  *status = s->Idle() ? ACL_STREAM_STATUS_COMPLETE : ACL_STREAM_STATUS_NOT_READY;
  return ACL_SUCCESS;
}

aclError aclrtMalloc(void **devPtr, size_t size, aclrtMemMallocPolicy policy) {
  if (devPtr == nullptr || size == 0) return Fail(ACL_ERROR_INVALID_PARAM, "aclrtMalloc: devPtr is null or size is 0");
  if (policy > ACL_MEM_MALLOC_NORMAL_ONLY) return Fail(ACL_ERROR_INVALID_PARAM, "aclrtMalloc: unsupported policy");
  int device = -1;
  if (const aclError e = RequireContext("aclrtMalloc", &device); e != ACL_SUCCESS) return e;
  std::string error;
  const aclError e = DeviceAlloc(device, size, true, devPtr, &error);
  if (e != ACL_SUCCESS) return Fail(e, "EL0004: aclrtMalloc failed: " + error);
  return ACL_SUCCESS;
}

aclError aclrtFree(void *devPtr) {
  {
    Runtime &r = R();
    std::lock_guard<std::mutex> lock(r.mu);
    if (devPtr == nullptr || r.allocations.count(reinterpret_cast<uintptr_t>(devPtr)) == 0) {
      return Fail(ACL_ERROR_INVALID_PARAM, "aclrtFree: address was not returned by aclrtMalloc");
    }
  }
  DeviceFree(devPtr);
  return ACL_SUCCESS;
}

aclError aclrtMallocHost(void **hostPtr, size_t size) {
  if (hostPtr == nullptr || size == 0) return Fail(ACL_ERROR_INVALID_PARAM, "aclrtMallocHost: hostPtr is null or size is 0");
  void *p = std::aligned_alloc(64, (size + 63) / 64 * 64);
  if (p == nullptr) return Fail(ACL_ERROR_BAD_ALLOC, "aclrtMallocHost: out of host memory");
  Runtime &r = R();
  std::lock_guard<std::mutex> lock(r.mu);
  r.pinned.insert(p);
  *hostPtr = p;
  return ACL_SUCCESS;
}

aclError aclrtFreeHost(void *hostPtr) {
  Runtime &r = R();
  std::lock_guard<std::mutex> lock(r.mu);
  if (r.pinned.erase(hostPtr) == 0) return Fail(ACL_ERROR_INVALID_PARAM, "aclrtFreeHost: address was not returned by aclrtMallocHost");
  std::free(hostPtr);
  return ACL_SUCCESS;
}

aclError aclrtMemcpy(void *dst, size_t destMax, const void *src, size_t count, aclrtMemcpyKind kind) {
  int device = -1;
  if (const aclError e = RequireContext("aclrtMemcpy", &device); e != ACL_SUCCESS) return e;
  if (const aclError e = CheckCopy("aclrtMemcpy", dst, destMax, src, count, kind, nullptr); e != ACL_SUCCESS) return e;
  std::memmove(dst, src, count);
  return ACL_SUCCESS;
}

aclError aclrtMemcpyAsync(void *dst, size_t destMax, const void *src, size_t count, aclrtMemcpyKind kind,
                          aclrtStream stream) {
  int device = -1;
  if (const aclError e = RequireContext("aclrtMemcpyAsync", &device); e != ACL_SUCCESS) return e;
  bool pinned = false;
  if (const aclError e = CheckCopy("aclrtMemcpyAsync", dst, destMax, src, count, kind, &pinned); e != ACL_SUCCESS) {
    return e;
  }
  const auto s = FindStream(stream);
  if (!s) return Fail(ACL_ERROR_INVALID_RESOURCE_HANDLE, "aclrtMemcpyAsync: invalid stream handle");
  if (pinned) {
    s->Push([dst, src, count](std::string *) {
      std::memmove(dst, src, count);
      return ACL_SUCCESS;
    });
    return ACL_SUCCESS;
  }
  // From or to pageable memory the copy completes before the call returns, as on an NPU.
  // Only the task owns the promise: a stream in error drops the task unrun,
  // which breaks the promise instead of leaving the caller waiting.
  auto done = std::make_shared<std::promise<void>>();
  auto finished = done->get_future();
  s->Push([dst, src, count, done = std::move(done)](std::string *) {
    std::memmove(dst, src, count);
    done->set_value();
    return ACL_SUCCESS;
  });
  try {
    finished.get();
  } catch (const std::future_error &) {
    return Fail(ACL_ERROR_RT_INTERNAL_ERROR, "aclrtMemcpyAsync: the stream is in an error state");
  }
  return ACL_SUCCESS;
}

aclError aclrtGetMemInfo(aclrtMemAttr attr, size_t *free, size_t *total) {
  if (free == nullptr || total == nullptr) return Fail(ACL_ERROR_INVALID_PARAM, "aclrtGetMemInfo: null output");
  int device = -1;
  if (const aclError e = RequireContext("aclrtGetMemInfo", &device); e != ACL_SUCCESS) return e;
  Runtime &r = R();
  std::lock_guard<std::mutex> lock(r.mu);
  const DeviceState &d = r.devices[device];
  if (attr == ACL_DDR_MEM || attr == ACL_DDR_MEM_HUGE || attr == ACL_DDR_MEM_NORMAL) {
    *free = 0;
    *total = 0;
  } else {
    *free = d.capacity - d.used;
    *total = d.capacity;
  }
  return ACL_SUCCESS;
}

}  // extern "C"
