// CANN simulator: ACL's include name for the GE error codes.
#ifndef GEMESH_SIM_ACL_ERROR_CODES_GE_ERROR_CODES_H_
#define GEMESH_SIM_ACL_ERROR_CODES_GE_ERROR_CODES_H_
#include "ge/ge_error_codes.h"
#endif  // GEMESH_SIM_ACL_ERROR_CODES_GE_ERROR_CODES_H_
