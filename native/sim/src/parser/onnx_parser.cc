// aclgrphParseONNX for the simulator: reads the ONNX protobuf with the onnx
// library, fixes input shapes from the `input_shape` parser option, checks the
// model with ONNX shape inference and converts it to the simulator IR.
#include "parser/onnx_parser.h"

#include <onnx/onnx_pb.h>
#include <onnx/defs/schema.h>
#include <onnx/shape_inference/implementation.h>

#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <unordered_map>
#include <vector>

#include "common/graph_ir.h"
#include "common/sim_errors.h"

namespace gemesh::sim {
namespace {

// Keys the parser accepts (E10016 for anything else), as in GE's parser whitelist.
const std::set<std::string> kParserKeys = {
    "input_shape", "ge.outputNodeName", "output", "ge.INPUT_NODES_SET_FP16", "is_input_adjust_hw_layout",
    "is_output_adjust_hw_layout", "enable_scope_fusion_passes", "input_data_names"};

ge::DataType DataTypeFromOnnx(int32_t elem) {
  switch (elem) {
    case onnx::TensorProto::FLOAT: return ge::DT_FLOAT;
    case onnx::TensorProto::UINT8: return ge::DT_UINT8;
    case onnx::TensorProto::INT8: return ge::DT_INT8;
    case onnx::TensorProto::UINT16: return ge::DT_UINT16;
    case onnx::TensorProto::INT16: return ge::DT_INT16;
    case onnx::TensorProto::INT32: return ge::DT_INT32;
    case onnx::TensorProto::INT64: return ge::DT_INT64;
    case onnx::TensorProto::STRING: return ge::DT_STRING;
    case onnx::TensorProto::BOOL: return ge::DT_BOOL;
    case onnx::TensorProto::FLOAT16: return ge::DT_FLOAT16;
    case onnx::TensorProto::DOUBLE: return ge::DT_DOUBLE;
    case onnx::TensorProto::UINT32: return ge::DT_UINT32;
    case onnx::TensorProto::UINT64: return ge::DT_UINT64;
    case onnx::TensorProto::BFLOAT16: return ge::DT_BF16;
    default: return ge::DT_UNDEFINED;
  }
}

template <typename Src, typename Dst, typename Field>
void AppendAs(const Field &field, std::vector<uint8_t> &out) {
  out.resize(static_cast<size_t>(field.size()) * sizeof(Dst));
  auto *p = reinterpret_cast<Dst *>(out.data());
  for (int i = 0; i < field.size(); ++i) p[i] = static_cast<Dst>(static_cast<Src>(field.Get(i)));
}

std::shared_ptr<const IrTensor> ConvertTensor(const onnx::TensorProto &t) {
  auto out = std::make_shared<IrTensor>();
  out->dtype = DataTypeFromOnnx(t.data_type());
  const int size = ge::GetSizeByDataType(out->dtype);
  if (size <= 0) throw SimError("tensor '" + t.name() + "' has an unsupported data type " + std::to_string(t.data_type()));
  if (t.data_location() == onnx::TensorProto::EXTERNAL) {
    throw SimError("tensor '" + t.name() + "' keeps its data in an external file, which the simulator does not read");
  }
  int64_t count = 1;
  for (const int64_t d : t.dims()) {
    if (d < 0) throw SimError("tensor '" + t.name() + "' has a negative dim");
    out->dims.push_back(d);
    count *= d;
  }
  std::vector<uint8_t> bytes;
  if (t.has_raw_data()) {
    bytes.assign(t.raw_data().begin(), t.raw_data().end());
  } else {
    switch (out->dtype) {
      case ge::DT_FLOAT: AppendAs<float, float>(t.float_data(), bytes); break;
      case ge::DT_DOUBLE: AppendAs<double, double>(t.double_data(), bytes); break;
      case ge::DT_INT64: AppendAs<int64_t, int64_t>(t.int64_data(), bytes); break;
      case ge::DT_INT32: AppendAs<int32_t, int32_t>(t.int32_data(), bytes); break;
      case ge::DT_INT16: AppendAs<int32_t, int16_t>(t.int32_data(), bytes); break;
      case ge::DT_UINT16:
      case ge::DT_FLOAT16:
      case ge::DT_BF16: AppendAs<int32_t, uint16_t>(t.int32_data(), bytes); break;
      case ge::DT_INT8: AppendAs<int32_t, int8_t>(t.int32_data(), bytes); break;
      case ge::DT_UINT8:
      case ge::DT_BOOL: AppendAs<int32_t, uint8_t>(t.int32_data(), bytes); break;
      case ge::DT_UINT32: AppendAs<uint64_t, uint32_t>(t.uint64_data(), bytes); break;
      case ge::DT_UINT64: AppendAs<uint64_t, uint64_t>(t.uint64_data(), bytes); break;
      default: break;
    }
  }
  if (bytes.size() != static_cast<size_t>(count) * static_cast<size_t>(size)) {
    throw SimError("tensor '" + t.name() + "' holds " + std::to_string(bytes.size()) + " bytes but its dims " +
                   DimsToString(out->dims) + " need " + std::to_string(count * size));
  }
  out->bytes = std::make_shared<const std::vector<uint8_t>>(std::move(bytes));
  return out;
}

IrAttr ConvertAttr(const onnx::AttributeProto &a, const std::string &node) {
  IrAttr out;
  switch (a.type()) {
    case onnx::AttributeProto::INT: out.kind = IrAttr::Kind::kInt; out.i = a.i(); break;
    case onnx::AttributeProto::FLOAT: out.kind = IrAttr::Kind::kFloat; out.f = a.f(); break;
    case onnx::AttributeProto::STRING: out.kind = IrAttr::Kind::kString; out.s = a.s(); break;
    case onnx::AttributeProto::INTS:
      out.kind = IrAttr::Kind::kInts;
      out.ints.assign(a.ints().begin(), a.ints().end());
      break;
    case onnx::AttributeProto::FLOATS:
      out.kind = IrAttr::Kind::kFloats;
      out.floats.assign(a.floats().begin(), a.floats().end());
      break;
    case onnx::AttributeProto::STRINGS:
      out.kind = IrAttr::Kind::kStrings;
      out.strings.assign(a.strings().begin(), a.strings().end());
      break;
    case onnx::AttributeProto::TENSOR:
      out.kind = IrAttr::Kind::kTensor;
      out.t = ConvertTensor(a.t());
      break;
    default:
      throw SimError("node '" + node + "': attribute '" + a.name() + "' of type " + std::to_string(a.type()) +
                     " (subgraphs, sparse tensors) is not supported by the simulator");
  }
  return out;
}

struct ShapeOverride {
  std::vector<int64_t> dims;
  bool used{false};
};

// "name:d0,d1;name2:d0" → overrides. A name may itself contain ':', so split at the last one.
std::map<std::string, ShapeOverride> ParseInputShape(const std::string &spec) {
  std::map<std::string, ShapeOverride> out;
  std::stringstream items(spec);
  std::string item;
  while (std::getline(items, item, ';')) {
    if (item.empty()) continue;
    const size_t colon = item.rfind(':');
    if (colon == std::string::npos || colon == 0) {
      throw SimError("E10001: Value [" + spec + "] for parameter [input_shape] is invalid. Reason: item [" + item +
                     "] is not of the form name:dims");
    }
    ShapeOverride o;
    std::stringstream dims(item.substr(colon + 1));
    std::string d;
    while (std::getline(dims, d, ',')) {
      if (d.find('~') != std::string::npos) {
        o.dims.push_back(-1);  // a range keeps the dim dynamic
        continue;
      }
      char *end = nullptr;
      const long long v = std::strtoll(d.c_str(), &end, 10);
      if (d.empty() || *end != '\0' || v < -1) {
        throw SimError("E10001: Value [" + spec + "] for parameter [input_shape] is invalid. Reason: dim [" + d +
                       "] of input [" + item.substr(0, colon) + "] is not an integer >= -1");
      }
      o.dims.push_back(v);
    }
    out[item.substr(0, colon)] = o;
  }
  return out;
}

std::vector<std::string> SplitList(const std::string &s) {
  std::vector<std::string> out;
  std::stringstream ss(s);
  std::string item;
  while (std::getline(ss, item, ';')) {
    if (!item.empty()) out.push_back(item);
  }
  return out;
}

void SetDims(onnx::TypeProto_Tensor *tt, const std::vector<int64_t> &dims) {
  auto *shape = tt->mutable_shape();
  shape->clear_dim();
  for (const int64_t d : dims) {
    auto *dim = shape->add_dim();
    if (d >= 0) dim->set_dim_value(d);
  }
}

void ReadValueInfo(const onnx::ValueInfoProto &vi, IrValue &v) {
  if (!vi.type().has_tensor_type()) return;
  const auto &tt = vi.type().tensor_type();
  if (tt.elem_type() != 0) v.dtype = DataTypeFromOnnx(tt.elem_type());
  if (!tt.has_shape()) return;
  v.has_rank = true;
  v.dims.clear();
  for (const auto &d : tt.shape().dim()) v.dims.push_back(d.has_dim_value() ? d.dim_value() : -1);
}

std::shared_ptr<IrGraph> Convert(onnx::ModelProto &model, const std::map<ge::AscendString, ge::AscendString> &params) {
  for (const auto &[key, value] : params) {
    const std::string k = key.GetString();
    if (kParserKeys.count(k) == 0) {
      throw SimError("E10016: Parameter [" + k + "] is not supported by the ONNX parser (accepted: input_shape, "
                     "ge.outputNodeName, output, ...)");
    }
    if (k == "ge.INPUT_NODES_SET_FP16" || k == "is_input_adjust_hw_layout" || k == "is_output_adjust_hw_layout") {
      if (std::string(value.GetString()).empty() || std::string(value.GetString()) == "false") continue;
      throw SimError("parser parameter [" + k + "] (fp16 / NC1HWC0 I/O) is not supported by the simulator");
    }
  }
  auto param = [&](const char *key) -> std::string {
    const auto it = params.find(ge::AscendString(key));
    return it == params.end() ? std::string() : std::string(it->second.GetString());
  };

  onnx::GraphProto *g = model.mutable_graph();
  auto ir = std::make_shared<IrGraph>();
  ir->name = param("output").empty() ? g->name() : param("output");
  for (const auto &op : model.opset_import()) {
    if (op.domain().empty() || op.domain() == "ai.onnx") ir->opset = op.version();
  }
  if (ir->opset == 0) throw SimError("the model imports no version of the default ONNX domain");

  std::set<std::string> initializer_names;
  for (const auto &t : g->initializer()) initializer_names.insert(t.name());

  // Fix the input shapes requested by input_shape before shape inference runs.
  auto overrides = ParseInputShape(param("input_shape"));
  for (auto &in : *g->mutable_input()) {
    if (initializer_names.count(in.name()) != 0) continue;
    const auto it = overrides.find(in.name());
    if (it == overrides.end()) continue;
    auto *tt = in.mutable_type()->mutable_tensor_type();
    if (tt->has_shape() && tt->shape().dim_size() != static_cast<int>(it->second.dims.size())) {
      throw SimError("E10001: Value [" + param("input_shape") + "] for parameter [input_shape] is invalid. Reason: input [" +
                     in.name() + "] has rank " + std::to_string(tt->shape().dim_size()) + " in the model but " +
                     std::to_string(it->second.dims.size()) + " dims were given");
    }
    SetDims(tt, it->second.dims);
    it->second.used = true;
  }
  for (const auto &[name, o] : overrides) {
    if (!o.used) {
      std::string names;
      for (const auto &in : g->input()) {
        if (initializer_names.count(in.name()) == 0) names += (names.empty() ? "" : ", ") + in.name();
      }
      throw SimError("E10001: Value [" + param("input_shape") + "] for parameter [input_shape] is invalid. Reason: the model "
                     "has no input [" + name + "] (inputs: " + names + ")");
    }
  }

  // Shapes declared for intermediate values and outputs may contradict the new
  // input shapes; drop them and let inference derive them from the inputs.
  g->clear_value_info();
  for (auto &out : *g->mutable_output()) {
    if (out.type().has_tensor_type()) out.mutable_type()->mutable_tensor_type()->clear_shape();
  }
  try {
    onnx::ShapeInferenceOptions options{false, 1, true};
    onnx::shape_inference::InferShapes(model, onnx::OpSchemaRegistry::Instance(), options);
  } catch (const std::exception &e) {
    throw SimError("ONNX shape inference failed for the given input shapes: " + std::string(e.what()));
  }

  std::unordered_map<std::string, int> index;
  auto value_of = [&](const std::string &name) -> int {
    const auto it = index.find(name);
    if (it != index.end()) return it->second;
    IrValue v;
    v.name = name;
    ir->values.push_back(v);
    index[name] = static_cast<int>(ir->values.size()) - 1;
    return index[name];
  };

  for (const auto &t : g->initializer()) ir->values[value_of(t.name())].constant = ConvertTensor(t);
  for (auto &v : ir->values) {
    v.dtype = v.constant->dtype;
    v.dims = v.constant->dims;
    v.has_rank = true;
  }
  for (const auto &in : g->input()) {
    if (initializer_names.count(in.name()) != 0) continue;
    const int id = value_of(in.name());
    ReadValueInfo(in, ir->values[id]);
    ir->inputs.push_back(id);
  }
  for (const auto &vi : g->value_info()) ReadValueInfo(vi, ir->values[value_of(vi.name())]);
  for (const auto &vi : g->output()) ReadValueInfo(vi, ir->values[value_of(vi.name())]);

  std::vector<IrNode> nodes;
  for (const auto &n : g->node()) {
    const std::string node_name = n.name().empty() ? n.op_type() + "_" + std::to_string(nodes.size()) : n.name();
    if (n.op_type() == "Constant" && (n.domain().empty() || n.domain() == "ai.onnx")) {
      // Constants become plain constant values (GE folds them into weights).
      if (n.output_size() != 1) throw SimError("Constant node '" + node_name + "' must have one output");
      std::shared_ptr<const IrTensor> t;
      for (const auto &a : n.attribute()) {
        if (a.name() == "value") {
          t = ConvertTensor(a.t());
        } else if (a.name() == "value_float" || a.name() == "value_int" || a.name() == "value_floats" ||
                   a.name() == "value_ints") {
          auto c = std::make_shared<IrTensor>();
          std::vector<uint8_t> bytes;
          if (a.name() == "value_float" || a.name() == "value_floats") {
            std::vector<float> f = a.name() == "value_float" ? std::vector<float>{a.f()}
                                                             : std::vector<float>(a.floats().begin(), a.floats().end());
            c->dtype = ge::DT_FLOAT;
            bytes.assign(reinterpret_cast<uint8_t *>(f.data()), reinterpret_cast<uint8_t *>(f.data() + f.size()));
            if (a.name() == "value_floats") c->dims = {static_cast<int64_t>(f.size())};
          } else {
            std::vector<int64_t> v = a.name() == "value_int" ? std::vector<int64_t>{a.i()}
                                                             : std::vector<int64_t>(a.ints().begin(), a.ints().end());
            c->dtype = ge::DT_INT64;
            bytes.assign(reinterpret_cast<uint8_t *>(v.data()), reinterpret_cast<uint8_t *>(v.data() + v.size()));
            if (a.name() == "value_ints") c->dims = {static_cast<int64_t>(v.size())};
          }
          c->bytes = std::make_shared<const std::vector<uint8_t>>(std::move(bytes));
          t = c;
        }
      }
      if (!t) throw SimError("Constant node '" + node_name + "' has no supported value attribute");
      IrValue &v = ir->values[value_of(n.output(0))];
      v.constant = t;
      v.dtype = t->dtype;
      v.dims = t->dims;
      v.has_rank = true;
      continue;
    }
    IrNode node;
    node.name = node_name;
    node.op_type = n.op_type();
    node.domain = n.domain();
    for (const auto &i : n.input()) node.inputs.push_back(i.empty() ? -1 : value_of(i));
    for (const auto &o : n.output()) node.outputs.push_back(o.empty() ? -1 : value_of(o));
    for (const auto &a : n.attribute()) node.attrs[a.name()] = ConvertAttr(a, node_name);
    nodes.push_back(std::move(node));
  }

  // Order nodes so every input is produced before use (ONNX requires it; be tolerant).
  std::vector<bool> ready(ir->values.size(), false);
  for (size_t i = 0; i < ir->values.size(); ++i) ready[i] = ir->values[i].constant != nullptr;
  for (const int i : ir->inputs) ready[i] = true;
  std::vector<bool> placed(nodes.size(), false);
  for (size_t done = 0; done < nodes.size();) {
    bool progress = false;
    for (size_t k = 0; k < nodes.size(); ++k) {
      if (placed[k]) continue;
      bool ok = true;
      for (const int i : nodes[k].inputs) ok = ok && (i < 0 || ready[i]);
      if (!ok) continue;
      for (const int o : nodes[k].outputs) {
        if (o >= 0) ready[o] = true;
      }
      placed[k] = true;
      ir->nodes.push_back(std::move(nodes[k]));
      ++done;
      progress = true;
    }
    if (!progress) {
      for (size_t k = 0; k < nodes.size(); ++k) {
        if (placed[k]) continue;
        for (const int i : nodes[k].inputs) {
          if (i >= 0 && !ready[i]) {
            throw SimError("node '" + nodes[k].name + "' reads '" + ir->values[i].name +
                           "', which no node, input or initializer produces");
          }
        }
      }
      throw SimError("the graph has a cycle");
    }
  }

  const std::string out_nodes = param("ge.outputNodeName");
  if (!out_nodes.empty()) {
    for (const auto &name : SplitList(out_nodes)) {
      const auto it = index.find(name);
      if (it == index.end() || !ready[it->second]) {
        throw SimError("E10001: Value [" + out_nodes + "] for parameter [ge.outputNodeName] is invalid. Reason: the "
                       "graph has no value [" + name + "]");
      }
      ir->outputs.push_back(it->second);
    }
  } else {
    for (const auto &o : g->output()) ir->outputs.push_back(index.at(o.name()));
  }
  if (ir->outputs.empty()) throw SimError("the model has no outputs");
  return ir;
}

ge::graphStatus Parse(onnx::ModelProto &model, const std::map<ge::AscendString, ge::AscendString> &params,
                      ge::Graph &graph) {
  try {
    auto ir = Convert(model, params);
    auto &impl = ge::GraphUtils::Impl(graph);
    if (!impl) impl = std::make_shared<ge::GraphImpl>();
    if (impl->name.empty()) impl->name = ir->name;
    impl->ir = std::move(ir);
    return ge::GRAPH_SUCCESS;
  } catch (const std::exception &e) {
    ReportError(std::string("[ONNX parser] ") + e.what());
    return ge::GRAPH_FAILED;
  }
}

}  // namespace
}  // namespace gemesh::sim

namespace ge {

graphStatus aclgrphParseONNX(const char *model_file, const std::map<AscendString, AscendString> &parser_params,
                             Graph &graph) {
  using gemesh::sim::ReportError;
  if (model_file == nullptr) {
    ReportError("[ONNX parser] E10004: model file path is null");
    return GRAPH_PARAM_INVALID;
  }
  std::ifstream in(model_file, std::ios::binary);
  if (!in) {
    ReportError(std::string("[ONNX parser] E10004: cannot open the model file [") + model_file + "]");
    return GRAPH_FAILED;
  }
  const std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  onnx::ModelProto model;
  if (bytes.empty() || !model.ParseFromString(bytes) || !model.has_graph()) {
    ReportError(std::string("[ONNX parser] E19999: the file [") + model_file + "] is not a valid ONNX model (" +
                std::to_string(bytes.size()) + " bytes could not be decoded as onnx.ModelProto)");
    return GRAPH_FAILED;
  }
  return gemesh::sim::Parse(model, parser_params, graph);
}

graphStatus aclgrphParseONNXFromMem(const char *buffer, size_t size,
                                    const std::map<AscendString, AscendString> &parser_params, Graph &graph) {
  using gemesh::sim::ReportError;
  onnx::ModelProto model;
  if (buffer == nullptr || size == 0 || !model.ParseFromArray(buffer, static_cast<int>(size)) || !model.has_graph()) {
    ReportError("[ONNX parser] E19999: the buffer is not a valid ONNX model (" + std::to_string(size) + " bytes)");
    return GRAPH_FAILED;
  }
  return gemesh::sim::Parse(model, parser_params, graph);
}

}  // namespace ge
