// CANN simulator: AscendCL umbrella header.
#ifndef GEMESH_SIM_ACL_ACL_H_
#define GEMESH_SIM_ACL_ACL_H_
#include "acl/acl_base.h"
#include "acl/acl_rt.h"
#endif  // GEMESH_SIM_ACL_ACL_H_
