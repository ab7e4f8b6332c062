// What libascendcl.so offers the rest of the simulator beyond the public ACL
// API: device memory with accounting, stream task queues and ACL messages.
#ifndef GEMESH_SIM_COMMON_SIM_RUNTIME_H_
#define GEMESH_SIM_COMMON_SIM_RUNTIME_H_

#include <cstddef>
#include <functional>
#include <string>

#include "acl/acl_base.h"

namespace gemesh::sim {

/// Records a message for this thread's aclGetRecentErrMsg().
void ReportAclError(const std::string &message);

/// Device of this thread's current context, or -1 when none is set.
int CurrentDevice();
/// Device a stream belongs to, or -1 for an unknown handle.
int StreamDevice(aclrtStream stream);

/// Device memory charged against the device's HBM capacity. Without backing
/// only the accounting happens (timing mode keeps weights and activations
/// virtual); such an address must never be dereferenced.
aclError DeviceAlloc(int device, size_t bytes, bool backed, void **ptr, std::string *error);
void DeviceFree(void *ptr);
/// True when [ptr, ptr+bytes) lies inside one live allocation; sets *device.
bool DeviceRange(const void *ptr, size_t bytes, int *device);

/// A unit of stream work, run on the stream's thread in FIFO order. A
/// non-success return becomes the stream's error, reported by the next
/// aclrtSynchronizeStream together with *message.
using StreamTask = std::function<aclError(std::string *message)>;
aclError EnqueueOnStream(aclrtStream stream, StreamTask task);

}  // namespace gemesh::sim

#endif  // GEMESH_SIM_COMMON_SIM_RUNTIME_H_
