// CANN simulator: GE's SUCCESS / FAILED statuses. Public Session methods collapse
// every failure to FAILED; the text is in GEGetErrorMsgV2().
#ifndef GEMESH_SIM_GE_GE_API_ERROR_CODES_H_
#define GEMESH_SIM_GE_GE_API_ERROR_CODES_H_

#include "ge/ge_api_types.h"
#include "ge/ge_error_codes.h"

namespace ge {
constexpr Status SUCCESS = 0U;
constexpr Status FAILED = 0xFFFFFFFFU;
}  // namespace ge

#endif  // GEMESH_SIM_GE_GE_API_ERROR_CODES_H_
