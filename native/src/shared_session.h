// A GE session shared by the loads of one model on one device (a worker's
// lanes): under ge.constLifecycle=session its weights sit in device memory
// once per device, while every load keeps its own graph ids, streams and I/O
// buffers (GE runs one graph id on one stream at a time). The Runtime keeps a
// registry of live ones by key; the last load to go deletes the session.
#ifndef GEMESH_BRIDGE_SHARED_SESSION_H_
#define GEMESH_BRIDGE_SHARED_SESSION_H_

#include <cstdint>
#include <map>
#include <memory>
#include <string>

#include "ge/ge_api.h"

namespace gemesh {

struct SharedSession {
  int32_t device{0};
  std::unique_ptr<ge::Session> session;
  /// GE's warnings from creating the session, repeated to every load that joins it.
  std::string warnings;
  /// Graphs parsed per input_shape, so a joining load skips the parse (each load adds its own copy).
  std::map<std::string, std::shared_ptr<ge::Graph>> parsed;
  /// Digest of the model file for the compile cache's keys, once per session ("" until needed).
  std::string file_digest;
};

}  // namespace gemesh

#endif  // GEMESH_BRIDGE_SHARED_SESSION_H_
