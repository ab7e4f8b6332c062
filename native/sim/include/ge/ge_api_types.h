// CANN simulator: GE's status type.
#ifndef GEMESH_SIM_GE_GE_API_TYPES_H_
#define GEMESH_SIM_GE_GE_API_TYPES_H_

#include <cstdint>

#include "graph/tensor.h"
#include "graph/types.h"

namespace ge {
using Status = uint32_t;
}  // namespace ge

#endif  // GEMESH_SIM_GE_GE_API_TYPES_H_
