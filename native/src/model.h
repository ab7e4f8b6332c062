// A loaded model: a GE session (its own, or shared with the other loads of
// the model on the device), its streams, and for every (stream, tier) a
// compiled and loaded graph id with device input/output buffers allocated
// once at load.
#ifndef GEMESH_BRIDGE_MODEL_H_
#define GEMESH_BRIDGE_MODEL_H_

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "acl/acl.h"
#include "ge/ge_api.h"
#include "gemesh_bridge.h"
#include "options.h"
#include "shared_session.h"

namespace gemesh {

struct TensorSpec {
  std::string name;
  int32_t dtype{0};
  std::vector<int64_t> dims;
  uint64_t bytes{0};
};

class Model {
 public:
  /// Caller holds Runtime::lifecycle(). Throws BridgeError; leaves nothing allocated on failure.
  static std::shared_ptr<Model> Load(const gemesh_model_config &config, const Options &global_options);
  ~Model();

  void Run(uint32_t stream, uint32_t tier, const void *const *inputs, const size_t *input_sizes, uint32_t input_count,
           void *const *outputs, const size_t *output_sizes, uint32_t output_count);
  /// Rejects new runs, waits for runs in flight, releases everything. Throws the first teardown failure.
  void Destroy();

  uint32_t tier_count() const { return static_cast<uint32_t>(tiers_.size()); }
  uint32_t stream_count() const { return static_cast<uint32_t>(streams_.size()); }
  uint32_t input_count() const { return static_cast<uint32_t>(tiers_.empty() ? 0 : tiers_[0].inputs.size()); }
  uint32_t output_count() const { return static_cast<uint32_t>(tiers_.empty() ? 0 : tiers_[0].outputs.size()); }
  const TensorSpec &input(uint32_t tier, uint32_t index) const;
  const TensorSpec &output(uint32_t tier, uint32_t index) const;
  const std::string &warnings() const { return warnings_; }
  /// The precision GE compiles the model's graphs with (options.h, PrecisionInEffect).
  const std::string &precision() const { return precision_; }
  /// Loads holding this model's session, this one included.
  uint32_t session_loads() const { return static_cast<uint32_t>(shared_.use_count()); }

 private:
  struct Tier {
    std::vector<TensorSpec> inputs;   // config order
    std::vector<TensorSpec> outputs;  // graph order
  };
  struct Slot {  // one (stream, tier)
    uint32_t graph_id{0};
    bool added{false};
    std::vector<void *> in_dev;   // graph input order
    std::vector<void *> out_dev;  // graph output order
    std::vector<gert::Tensor> in_tensors;
    std::vector<gert::Tensor> out_tensors;
  };
  struct Stream {
    aclrtStream handle{nullptr};
    std::atomic<bool> busy{false};
  };

  Model() = default;
  void AddWarnings(const std::string &text);
  /// With ge.graph_compiler_cache_dir set: checks it and prepares the per-tier ge.graph_key.
  void PrepareCompileCache(const Options &global, const Options &session, const Options &graph);
  /// Joins the session shared under config.share_key, or creates one (shared when the key is set).
  void OpenSession(const gemesh_model_config &config, const Options &session_options, const Options &graph_options);
  void LoadTier(uint32_t tier, const gemesh_model_config &config, const Options &graph_options);
  void ResolveInputOrder(const ge::Graph &graph);
  /// Maps configured input c to the one Data node d with fits(c, d); throws naming the inputs that have none or several.
  void MatchInputsByType(size_t data_count, const std::function<bool(size_t, size_t)> &fits, const std::string &names);
  /// Same rank and equal sizes where both are known (-1 matches any); an unknown graph shape matches.
  static bool SameShape(const std::vector<int64_t> &graph, const std::vector<int64_t> &configured);
  void Release(std::string *failures);
  void BeginRun();
  void EndRun();

  int32_t device_{0};
  aclrtContext ctx_{nullptr};
  std::string path_;
  std::shared_ptr<SharedSession> shared_;
  ge::Session *session_{nullptr};  // shared_->session
  std::vector<Tier> tiers_;
  std::vector<std::unique_ptr<Stream>> streams_;
  std::vector<Slot> slots_;  // index: stream * tier_count + tier
  /// graph_input_of_[config index] = graph input position.
  std::vector<size_t> graph_input_of_;
  std::string warnings_;
  std::string precision_;
  std::string cache_model_digest_;  // non-empty: the compile cache is on
  std::string cache_options_;

  std::mutex run_mu_;
  std::condition_variable run_cv_;
  int in_flight_{0};
  bool closing_{false};
  bool released_{false};
};

}  // namespace gemesh

#endif  // GEMESH_BRIDGE_MODEL_H_
