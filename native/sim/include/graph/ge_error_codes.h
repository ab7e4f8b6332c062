// CANN simulator: older include name for graph/error_codes.h.
#ifndef GEMESH_SIM_GRAPH_GE_ERROR_CODES_H_
#define GEMESH_SIM_GRAPH_GE_ERROR_CODES_H_
#include "graph/error_codes.h"
#endif  // GEMESH_SIM_GRAPH_GE_ERROR_CODES_H_
