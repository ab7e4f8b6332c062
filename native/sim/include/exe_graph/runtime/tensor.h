// CANN simulator: older include name for runtime_tensor.h.
#ifndef GEMESH_SIM_EXE_GRAPH_RUNTIME_TENSOR_H_
#define GEMESH_SIM_EXE_GRAPH_RUNTIME_TENSOR_H_
#include "exe_graph/runtime/runtime_tensor.h"
#endif  // GEMESH_SIM_EXE_GRAPH_RUNTIME_TENSOR_H_
