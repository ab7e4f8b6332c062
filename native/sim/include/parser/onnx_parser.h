// CANN simulator: the ONNX parser entry points (libfmk_onnx_parser.so).
#ifndef GEMESH_SIM_PARSER_ONNX_PARSER_H_
#define GEMESH_SIM_PARSER_ONNX_PARSER_H_

#include <map>

#include "graph/ascend_string.h"
#include "graph/error_codes.h"
#include "graph/graph.h"

namespace ge {
/// parser_params keys outside the parser's whitelist are rejected (E10016).
GE_FUNC_VISIBILITY graphStatus aclgrphParseONNX(const char *model_file,
                                                const std::map<ge::AscendString, ge::AscendString> &parser_params,
                                                ge::Graph &graph);
GE_FUNC_VISIBILITY graphStatus aclgrphParseONNXFromMem(const char *buffer, size_t size,
                                                       const std::map<ge::AscendString, ge::AscendString> &parser_params,
                                                       ge::Graph &graph);
}  // namespace ge

#endif  // GEMESH_SIM_PARSER_ONNX_PARSER_H_
