// CANN simulator: gert::TensorData, an address with an optional manager, its byte
// size and placement. Without a manager the address is borrowed: nothing frees it.
#ifndef GEMESH_SIM_EXE_GRAPH_RUNTIME_TENSOR_DATA_H_
#define GEMESH_SIM_EXE_GRAPH_RUNTIME_TENSOR_DATA_H_

#include <cstddef>
#include <cstdint>

#include "graph/error_codes.h"

namespace gert {
using TensorAddress = void *;
using ConstTensorAddressPtr = const void *;

enum TensorPlacement : int32_t {
  kOnDeviceHbm,
  kOnHost,
  kFollowing,
  kOnDeviceP2p,
  kTensorPlacementEnd
};

enum TensorOperateType : int32_t { kGetTensorAddress, kFreeTensor, kPlusShareCount, kTensorOperateType };
using TensorAddrManager = ge::graphStatus (*)(TensorAddress addr, TensorOperateType operate_type, void **out);

class TensorData {
 public:
  explicit TensorData(TensorAddress addr = nullptr, const TensorAddrManager manager = nullptr)
      : TensorData(addr, manager, 0U, kTensorPlacementEnd) {}
  TensorData(TensorAddress addr, const TensorAddrManager manager, size_t size, TensorPlacement placement)
      : addr_(addr), manager_(manager), size_(size), placement_(placement) {}
  TensorData(const TensorData &) = delete;
  TensorData &operator=(const TensorData &) = delete;
  TensorData(TensorData &&other) noexcept
      : addr_(other.addr_), manager_(other.manager_), size_(other.size_), placement_(other.placement_) {
    other.addr_ = nullptr;
    other.manager_ = nullptr;
    other.size_ = 0U;
    other.placement_ = kTensorPlacementEnd;
  }
  TensorData &operator=(TensorData &&other) noexcept {
    if (this != &other) {
      (void)Free();
      addr_ = other.addr_;
      manager_ = other.manager_;
      size_ = other.size_;
      placement_ = other.placement_;
      other.addr_ = nullptr;
      other.manager_ = nullptr;
      other.size_ = 0U;
      other.placement_ = kTensorPlacementEnd;
    }
    return *this;
  }
  ~TensorData() noexcept { (void)Free(); }

  TensorAddress GetAddr() const {
    if (manager_ == nullptr || addr_ == nullptr) return addr_;
    TensorAddress out = nullptr;
    return manager_(addr_, kGetTensorAddress, &out) == ge::GRAPH_SUCCESS ? out : nullptr;
  }
  size_t GetSize() const { return size_; }
  void SetSize(const size_t size) { size_ = size; }
  TensorPlacement GetPlacement() const { return placement_; }
  void SetPlacement(const TensorPlacement placement) { placement_ = placement; }
  ge::graphStatus Free() {
    if (manager_ == nullptr) return ge::GRAPH_SUCCESS;
    const ge::graphStatus ret = manager_(addr_, kFreeTensor, nullptr);
    if (ret == ge::GRAPH_SUCCESS) {
      addr_ = nullptr;
      manager_ = nullptr;
    }
    return ret;
  }
  ge::graphStatus SetAddr(const ConstTensorAddressPtr addr, TensorAddrManager manager) {
    const ge::graphStatus ret = Free();
    if (ret != ge::GRAPH_SUCCESS) return ret;
    addr_ = const_cast<TensorAddress>(addr);
    manager_ = manager;
    return ge::GRAPH_SUCCESS;
  }

 private:
  TensorAddress addr_;
  TensorAddrManager manager_;
  size_t size_;
  TensorPlacement placement_;
};
}  // namespace gert

#endif  // GEMESH_SIM_EXE_GRAPH_RUNTIME_TENSOR_DATA_H_
