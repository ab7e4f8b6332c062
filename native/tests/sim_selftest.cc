// Self-test of the CANN simulator below the bridge: kernels against naive
// reference loops, the ACL runtime's accounting and messages, and GE's rules
// that the bridge never breaks on purpose (so its tests cannot reach them).
// Prints one line per check and "N passed, M failed"; exits non-zero on failure.
#include <onnx/onnx_pb.h>

#include <unistd.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <deque>
#include <functional>
#include <map>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "acl/acl.h"
#include "common/sim_runtime.h"
#include "ge/ge_api.h"
#include "ops/kernel.h"
#include "parser/onnx_parser.h"
#include "runner/latency.h"

using namespace gemesh::sim;

namespace {

int g_passed = 0;
int g_failed = 0;

void Check(const std::string &name, const std::function<std::string()> &body) {
  std::string failure;
  try {
    failure = body();
  } catch (const std::exception &e) {
    failure = std::string("exception: ") + e.what();
  }
  if (failure.empty()) {
    ++g_passed;
    std::printf("ok - %s\n", name.c_str());
  } else {
    ++g_failed;
    std::printf("not ok - %s: %s\n", name.c_str(), failure.c_str());
  }
}

std::vector<float> Random(size_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> d(-1.0f, 1.0f);
  std::vector<float> v(n);
  for (auto &x : v) x = d(rng);
  return v;
}

std::string Compare(const std::vector<float> &got, const std::vector<float> &want, float tol) {
  if (got.size() != want.size()) return "size " + std::to_string(got.size()) + " != " + std::to_string(want.size());
  for (size_t i = 0; i < got.size(); ++i) {
    if (!(std::fabs(got[i] - want[i]) <= tol)) {
      return "element " + std::to_string(i) + ": " + std::to_string(got[i]) + " != " + std::to_string(want[i]);
    }
  }
  return "";
}

// Builds and runs one kernel on host buffers, the way the compiler does.
std::vector<std::vector<float>> RunKernel(IrNode node, int64_t opset, const std::vector<TensorMeta> &metas,
                                          const std::vector<std::vector<float>> &data, std::vector<TensorMeta> *out_metas) {
  std::deque<std::vector<uint8_t>> storage;
  std::vector<const TensorMeta *> in;
  for (const auto &m : metas) in.push_back(&m);
  for (size_t i = 0; i < metas.size(); ++i) node.inputs.push_back(static_cast<int>(i));
  if (node.outputs.empty()) node.outputs = {0};
  BuildContext ctx(node, opset, in, &storage);
  std::vector<TensorMeta> outs(node.outputs.size());
  auto kernel = FindKernel(node.op_type)(ctx, outs);
  std::vector<const void *> ins;
  for (size_t i = 0; i < metas.size(); ++i) ins.push_back(metas[i].data != nullptr ? static_cast<const void *>(metas[i].data) : data[i].data());
  std::vector<std::vector<float>> results;
  std::vector<void *> outp;
  for (const auto &o : outs) results.emplace_back(static_cast<size_t>(o.Elements()));
  for (auto &r : results) outp.push_back(r.data());
  std::vector<uint8_t> scratch(kernel->scratch_bytes + 64);
  kernel->Run(KernelArgs{ins.data(), outp.data(), scratch.data()});
  if (out_metas != nullptr) *out_metas = outs;
  return results;
}

IrAttr Ints(std::vector<int64_t> v) {
  IrAttr a;
  a.kind = IrAttr::Kind::kInts;
  a.ints = std::move(v);
  return a;
}

IrAttr Int(int64_t v) {
  IrAttr a;
  a.kind = IrAttr::Kind::kInt;
  a.i = v;
  return a;
}

void CheckGemm() {
  struct Case {
    int64_t M, N, K;
    float alpha, beta;
  };
  for (const Case c : {Case{1, 1000, 512, 1, 0}, Case{7, 300, 130, 1, 0}, Case{16, 17, 3, 0.5f, 2}, Case{64, 513, 257, 1, 1}}) {
    Check("Sgemm " + std::to_string(c.M) + "x" + std::to_string(c.N) + "x" + std::to_string(c.K) + " matches a naive loop",
          [&] {
            const auto A = Random(c.M * c.K, 1), B = Random(c.K * c.N, 2), C0 = Random(c.M * c.N, 3);
            std::vector<float> got = C0, want(c.M * c.N);
            Sgemm(c.M, c.N, c.K, c.alpha, A.data(), c.K, B.data(), c.N, c.beta, got.data(), c.N);
            for (int64_t i = 0; i < c.M; ++i) {
              for (int64_t j = 0; j < c.N; ++j) {
                double s = 0;
                for (int64_t k = 0; k < c.K; ++k) s += static_cast<double>(A[i * c.K + k]) * B[k * c.N + j];
                want[i * c.N + j] = static_cast<float>(c.alpha * s + c.beta * C0[i * c.N + j]);
              }
            }
            return Compare(got, want, 1e-4f * std::sqrt(static_cast<float>(c.K)));
          });
  }
}

void CheckConv() {
  struct Case {
    int64_t N, C, H, W, M, k, stride, pad, dil, group;
  };
  for (const Case c : {Case{2, 3, 9, 11, 4, 3, 2, 1, 1, 1}, Case{1, 4, 8, 8, 4, 3, 1, 1, 1, 4}, Case{1, 4, 7, 7, 6, 3, 1, 2, 2, 2},
                       Case{2, 5, 6, 6, 3, 1, 1, 0, 1, 1}}) {
    Check("Conv k" + std::to_string(c.k) + " s" + std::to_string(c.stride) + " p" + std::to_string(c.pad) + " d" +
              std::to_string(c.dil) + " g" + std::to_string(c.group) + " matches a direct loop",
          [&] {
            const int64_t Cg = c.C / c.group, Mg = c.M / c.group;
            const auto X = Random(c.N * c.C * c.H * c.W, 4), Wt = Random(c.M * Cg * c.k * c.k, 5), B = Random(c.M, 6);
            IrNode node;
            node.name = "conv";
            node.op_type = "Conv";
            node.attrs["strides"] = Ints({c.stride, c.stride});
            node.attrs["pads"] = Ints({c.pad, c.pad, c.pad, c.pad});
            node.attrs["dilations"] = Ints({c.dil, c.dil});
            node.attrs["group"] = Int(c.group);
            std::vector<TensorMeta> metas = {{ge::DT_FLOAT, {c.N, c.C, c.H, c.W}, nullptr},
                                             {ge::DT_FLOAT, {c.M, Cg, c.k, c.k}, nullptr},
                                             {ge::DT_FLOAT, {c.M}, nullptr}};
            std::vector<TensorMeta> outs;
            const auto got = RunKernel(node, 17, metas, {X, Wt, B}, &outs)[0];
            const int64_t oH = (c.H + 2 * c.pad - c.dil * (c.k - 1) - 1) / c.stride + 1;
            const int64_t oW = (c.W + 2 * c.pad - c.dil * (c.k - 1) - 1) / c.stride + 1;
            if (outs[0].dims != std::vector<int64_t>{c.N, c.M, oH, oW}) return "output dims " + DimsToString(outs[0].dims);
            std::vector<float> want(c.N * c.M * oH * oW);
            for (int64_t n = 0; n < c.N; ++n)
              for (int64_t m = 0; m < c.M; ++m)
                for (int64_t oh = 0; oh < oH; ++oh)
                  for (int64_t ow = 0; ow < oW; ++ow) {
                    double s = B[m];
                    const int64_t g = m / Mg;
                    for (int64_t ci = 0; ci < Cg; ++ci)
                      for (int64_t kh = 0; kh < c.k; ++kh)
                        for (int64_t kw = 0; kw < c.k; ++kw) {
                          const int64_t ih = oh * c.stride - c.pad + kh * c.dil, iw = ow * c.stride - c.pad + kw * c.dil;
                          if (ih < 0 || ih >= c.H || iw < 0 || iw >= c.W) continue;
                          s += static_cast<double>(X[((n * c.C + g * Cg + ci) * c.H + ih) * c.W + iw]) *
                               Wt[((m * Cg + ci) * c.k + kh) * c.k + kw];
                        }
                    want[((n * c.M + m) * oH + oh) * oW + ow] = static_cast<float>(s);
                  }
            return Compare(got, want, 1e-4f);
          });
  }
}

void CheckBroadcast() {
  using Dims = std::vector<int64_t>;
  for (const auto &[a, b] : std::vector<std::pair<Dims, Dims>>{
           {{2, 3, 4, 5}, {2, 3, 1, 1}}, {{4, 1, 3}, {5, 1}}, {{3}, {2, 3}}, {{2, 1, 4}, {1, 3, 1}}, {{}, {2, 2}}}) {
    Check("Sub broadcasts " + DimsToString(a) + " with " + DimsToString(b), [&] {
      IrNode node;
      node.name = "sub";
      node.op_type = "Sub";
      std::vector<TensorMeta> metas = {{ge::DT_FLOAT, a, nullptr}, {ge::DT_FLOAT, b, nullptr}};
      const auto A = Random(static_cast<size_t>(metas[0].Elements()), 7), B = Random(static_cast<size_t>(metas[1].Elements()), 8);
      std::vector<TensorMeta> outs;
      const auto got = RunKernel(node, 17, metas, {A, B}, &outs)[0];
      const Dims &o = outs[0].dims;
      // Naive: index each input by the output coordinate, right-aligned, size-1 dims pinned to 0.
      std::vector<float> want(got.size());
      for (size_t flat = 0; flat < want.size(); ++flat) {
        std::vector<int64_t> coord(o.size());
        size_t rem = flat;
        for (size_t d = o.size(); d-- > 0;) {
          coord[d] = static_cast<int64_t>(rem % o[d]);
          rem /= o[d];
        }
        auto at = [&](const Dims &dims, const std::vector<float> &v) {
          size_t idx = 0;
          for (size_t d = 0; d < dims.size(); ++d) {
            const int64_t c = dims[d] == 1 ? 0 : coord[o.size() - dims.size() + d];
            idx = idx * dims[d] + c;
          }
          return v[idx];
        };
        want[flat] = at(a, A) - at(b, B);
      }
      return Compare(got, want, 0.0f);
    });
  }
}

void CheckLatency() {
  Check("latency formula A+B*batch", [] {
    const auto m = LatencyModel::Parse("800+150*batch");
    return m.MicrosFor(4) == 1400.0 ? "" : "got " + std::to_string(m.MicrosFor(4));
  });
  Check("latency table interpolates and extends", [] {
    const auto m = LatencyModel::Parse("1=1000,4=1600,8=2000");
    if (m.MicrosFor(4) != 1600.0) return "exact " + std::to_string(m.MicrosFor(4));
    if (m.MicrosFor(2) != 1200.0) return "between " + std::to_string(m.MicrosFor(2));
    if (m.MicrosFor(16) != 2800.0) return "beyond " + std::to_string(m.MicrosFor(16));
    return std::string();
  });
  Check("latency spec errors name the spec", [] {
    try {
      (void)LatencyModel::Parse("fast");
    } catch (const SimError &e) {
      return std::string(e.what()).find("[fast]") != std::string::npos ? "" : std::string("message: ") + e.what();
    }
    return std::string("no error");
  });
}

// A model y = Relu(x · W) with x [batch, 4], written to a temp file.
std::string WriteMatMulModel() {
  onnx::ModelProto m;
  m.set_ir_version(8);
  m.add_opset_import()->set_version(17);
  auto *g = m.mutable_graph();
  g->set_name("mm");
  auto *in = g->add_input();
  in->set_name("x");
  in->mutable_type()->mutable_tensor_type()->set_elem_type(onnx::TensorProto::FLOAT);
  in->mutable_type()->mutable_tensor_type()->mutable_shape()->add_dim()->set_dim_param("batch");
  in->mutable_type()->mutable_tensor_type()->mutable_shape()->add_dim()->set_dim_value(4);
  auto *w = g->add_initializer();
  w->set_name("w");
  w->set_data_type(onnx::TensorProto::FLOAT);
  w->add_dims(4);
  w->add_dims(2);
  for (int i = 0; i < 8; ++i) w->add_float_data(static_cast<float>(i) - 3.5f);
  auto *mm = g->add_node();
  mm->set_op_type("MatMul");
  mm->add_input("x");
  mm->add_input("w");
  mm->add_output("h");
  auto *relu = g->add_node();
  relu->set_op_type("Relu");
  relu->add_input("h");
  relu->add_output("y");
  auto *out = g->add_output();
  out->set_name("y");
  out->mutable_type()->mutable_tensor_type()->set_elem_type(onnx::TensorProto::FLOAT);
  const std::string path = "/tmp/gemesh_selftest_" + std::to_string(::getpid()) + ".onnx";
  std::ofstream f(path, std::ios::binary);
  m.SerializeToOstream(&f);
  return path;
}

std::string Messages() {
  std::string s = ge::GEGetErrorMsgV2().GetString();
  const char *acl = aclGetRecentErrMsg();
  if (acl != nullptr) s += std::string(" | ") + acl;
  return s;
}

std::string Expect(bool ok, const std::string &what) { return ok ? "" : what + " (messages: " + Messages() + ")"; }

gert::Tensor DevTensor(std::vector<int64_t> dims, void *p) {
  gert::StorageShape shape;
  for (const int64_t d : dims) {
    shape.MutableOriginShape().AppendDim(d);
    shape.MutableStorageShape().AppendDim(d);
  }
  return gert::Tensor(shape, gert::StorageFormat(ge::FORMAT_ND, ge::FORMAT_ND, {}), gert::kOnDeviceHbm, ge::DT_FLOAT, p);
}

void CheckRuntimeAndRules() {
  // The environment (GEMESH_SIM_DEVICES=2, GEMESH_SIM_HBM_MB=64) is set by the caller.
  Check("aclInit then aclInit again reports ACL_ERROR_REPEAT_INITIALIZE", [] {
    if (aclInit(nullptr) != ACL_SUCCESS) return std::string("first aclInit failed");
    return Expect(aclInit(nullptr) == ACL_ERROR_REPEAT_INITIALIZE, "second aclInit");
  });
  Check("aclrtMalloc without a current context fails with ACL_ERROR_RT_CONTEXT_NULL", [] {
    void *p = nullptr;
    const aclError e = aclrtMalloc(&p, 64, ACL_MEM_MALLOC_HUGE_FIRST);
    const char *msg = aclGetRecentErrMsg();
    if (e != ACL_ERROR_RT_CONTEXT_NULL) return "error " + std::to_string(e);
    if (msg == nullptr || std::string(msg).find("no current context") == std::string::npos) return std::string("message");
    return Expect(aclGetRecentErrMsg() == nullptr, "message not cleared after reading");
  });
  Check("HBM accounting: capacity, rounding and out-of-memory", [] {
    if (aclrtSetDevice(1) != ACL_SUCCESS) return std::string("aclrtSetDevice(1)");
    size_t free0 = 0, total = 0;
    aclrtGetMemInfo(ACL_HBM_MEM, &free0, &total);
    if (total != 64u * 1024 * 1024 || free0 != total) return "total " + std::to_string(total) + " free " + std::to_string(free0);
    void *p = nullptr;
    if (aclrtMalloc(&p, 100, ACL_MEM_MALLOC_HUGE_FIRST) != ACL_SUCCESS) return std::string("aclrtMalloc(100)");
    if (reinterpret_cast<uintptr_t>(p) % 32 != 0) return std::string("not 32-byte aligned");
    size_t free1 = 0;
    aclrtGetMemInfo(ACL_HBM_MEM, &free1, &total);
    if (free0 - free1 != 160) return "charged " + std::to_string(free0 - free1) + " bytes for 100, expected 160";
    void *big = nullptr;
    const aclError e = aclrtMalloc(&big, 64u * 1024 * 1024, ACL_MEM_MALLOC_HUGE_FIRST);
    const char *msg = aclGetRecentErrMsg();
    if (e != ACL_ERROR_RT_MEMORY_ALLOCATION) return "oversized aclrtMalloc returned " + std::to_string(e);
    if (msg == nullptr || std::string(msg).find("out of device memory") == std::string::npos) return std::string("no OOM message");
    aclrtFree(p);
    size_t free2 = 0;
    aclrtGetMemInfo(ACL_HBM_MEM, &free2, &total);
    return Expect(free2 == free0, "memory not returned after aclrtFree");
  });
  Check("a stream runs its tasks in FIFO order", [] {
    aclrtStream s = nullptr;
    if (aclrtCreateStream(&s) != ACL_SUCCESS) return std::string("aclrtCreateStream");
    std::vector<int> order;
    for (int i = 0; i < 50; ++i) {
      EnqueueOnStream(s, [&order, i](std::string *) {
        order.push_back(i);
        return ACL_SUCCESS;
      });
    }
    aclrtSynchronizeStream(s);
    aclrtDestroyStream(s);
    for (int i = 0; i < 50; ++i) {
      if (order.size() != 50 || order[i] != i) return std::string("out of order");
    }
    return std::string();
  });

  const std::string path = WriteMatMulModel();
  std::map<ge::AscendString, ge::AscendString> global = {{"ge.graphRunMode", "0"}};
  Check("GEInitialize accepts valid global options", [&] { return Expect(ge::GEInitialize(global) == ge::SUCCESS, "GEInitialize"); });
  Check("GEInitialize with a bad value of a known key fails naming the key (after GEFinalize)", [&] {
    ge::GEFinalize();
    const bool failed = ge::GEInitialize({{"ge.exec.precision_mode_v2", "fp64"}}) == ge::FAILED;
    const std::string msg = ge::GEGetErrorMsgV2().GetString();
    ge::GEInitialize(global);
    if (!failed) return std::string("GEInitialize accepted fp64");
    return Expect(msg.find("[ge.exec.precision_mode_v2]") != std::string::npos, "message: " + msg);
  });
  aclrtSetDevice(0);
  ge::Session session({{"ge.session_device_id", "0"}, {"ge.exec.precision_mode_v2", "origin"}});
  ge::Graph graph("mm");
  Check("aclgrphParseONNX with input_shape", [&] {
    return Expect(ge::aclgrphParseONNX(path.c_str(), {{"input_shape", "x:2,4"}}, graph) == ge::GRAPH_SUCCESS, "parse");
  });
  Check("the parser rejects keys outside its whitelist (E10016)", [&] {
    ge::Graph g2("bad");
    const bool failed = ge::aclgrphParseONNX(path.c_str(), {{"input_format", "ND"}}, g2) != ge::GRAPH_SUCCESS;
    const std::string msg = ge::GEGetErrorMsgV2().GetString();
    return Expect(failed && msg.find("E10016") != std::string::npos && msg.find("input_format") != std::string::npos, "message: " + msg);
  });
  Check("AddGraph, then LoadGraph before CompileGraph fails (E10062)", [&] {
    if (session.AddGraphWithCopy(1, graph, {}) != ge::SUCCESS) return "AddGraph: " + Messages();
    if (session.AddGraphWithCopy(2, graph, {}) != ge::SUCCESS) return "AddGraph 2: " + Messages();
    aclrtStream s = nullptr;
    aclrtCreateStream(&s);
    const bool failed = session.LoadGraph(1, {}, s) == ge::FAILED;
    const std::string msg = ge::GEGetErrorMsgV2().GetString();
    aclrtDestroyStream(s);
    return Expect(failed && msg.find("E10062") != std::string::npos, "message: " + msg);
  });
  Check("ExecuteGraphWithStreamAsync before LoadGraph fails", [&] {
    if (session.CompileGraph(1) != ge::SUCCESS) return "CompileGraph: " + Messages();
    aclrtStream s = nullptr;
    aclrtCreateStream(&s);
    std::vector<gert::Tensor> in, out;
    const bool failed = session.ExecuteGraphWithStreamAsync(1, s, in, out) == ge::FAILED;
    const std::string msg = ge::GEGetErrorMsgV2().GetString();
    aclrtDestroyStream(s);
    return Expect(failed && msg.find("not loaded") != std::string::npos, "message: " + msg);
  });
  Check("LoadGraph rejects options other than the input-index ones", [&] {
    aclrtStream s = nullptr;
    aclrtCreateStream(&s);
    const bool failed = session.LoadGraph(1, {{"ge.exec.precision_mode_v2", "origin"}}, s) == ge::FAILED;
    const std::string msg = ge::GEGetErrorMsgV2().GetString();
    aclrtDestroyStream(s);
    return Expect(failed && msg.find("not accepted by LoadGraph") != std::string::npos, "message: " + msg);
  });
  Check("one graph id never runs on two streams at once; loading twice fails", [&] {
    // Timing mode keeps the first run busy for 200 ms.
    if (session.AddGraphWithCopy(3, graph, {{"gemesh.sim.timing", "1"}, {"gemesh.sim.latency_us", "200000"}}) != ge::SUCCESS) {
      return "AddGraph: " + Messages();
    }
    aclrtStream a = nullptr, b = nullptr;
    aclrtCreateStream(&a);
    aclrtCreateStream(&b);
    if (session.CompileGraph(3) != ge::SUCCESS || session.LoadGraph(3, {}, a) != ge::SUCCESS) return "load: " + Messages();
    if (session.LoadGraph(3, {}, a) != ge::FAILED) return std::string("second LoadGraph succeeded");
    (void)ge::GEGetErrorMsgV2();
    void *x = nullptr, *y = nullptr;
    aclrtMalloc(&x, 32, ACL_MEM_MALLOC_HUGE_FIRST);
    aclrtMalloc(&y, 16, ACL_MEM_MALLOC_HUGE_FIRST);
    std::vector<gert::Tensor> in, out;
    in.push_back(DevTensor({2, 4}, x));
    out.push_back(DevTensor({2, 2}, y));
    if (session.ExecuteGraphWithStreamAsync(3, a, in, out) != ge::SUCCESS) return "first run: " + Messages();
    const bool second_failed = session.ExecuteGraphWithStreamAsync(3, b, in, out) == ge::FAILED;
    const std::string msg = ge::GEGetErrorMsgV2().GetString();
    const bool same_stream_ok = session.ExecuteGraphWithStreamAsync(3, a, in, out) == ge::SUCCESS;
    aclrtSynchronizeStream(a);
    const bool after_sync_ok = session.ExecuteGraphWithStreamAsync(3, b, in, out) == ge::SUCCESS;
    aclrtSynchronizeStream(b);
    aclrtFree(x);
    aclrtFree(y);
    aclrtDestroyStream(a);
    aclrtDestroyStream(b);
    if (!second_failed || msg.find("another stream") == std::string::npos) return "concurrent run on stream b: " + msg;
    if (!same_stream_ok) return std::string("queueing a second run on the same stream failed");
    return Expect(after_sync_ok, "running on stream b after stream a finished");
  });
  Check("a graph runs correctly from a thread that set the context, and fails on one that did not", [&] {
    if (session.CompileGraph(2) != ge::SUCCESS) return "compile: " + Messages();
    aclrtContext ctx = nullptr;
    aclrtGetCurrentContext(&ctx);
    aclrtStream s = nullptr;
    aclrtCreateStream(&s);
    if (session.LoadGraph(2, {}, s) != ge::SUCCESS) return "load: " + Messages();
    std::string result;
    std::thread([&] {
      void *x = nullptr;
      std::vector<gert::Tensor> in, out;
      if (session.ExecuteGraphWithStreamAsync(2, s, in, out) != ge::FAILED) {
        result = "executing without a context succeeded";
        return;
      }
      const std::string msg = ge::GEGetErrorMsgV2().GetString();
      if (msg.find("aclrtSetCurrentContext") == std::string::npos) {
        result = "message: " + msg;
        return;
      }
      aclrtSetCurrentContext(ctx);
      const float xs[8] = {1, 0, 0, 0, 0, 0, 0, 1};
      aclrtMalloc(&x, sizeof(xs), ACL_MEM_MALLOC_HUGE_FIRST);
      aclrtMemcpy(x, sizeof(xs), xs, sizeof(xs), ACL_MEMCPY_HOST_TO_DEVICE);
      in.push_back(DevTensor({2, 4}, x));  // outputs left empty: GE allocates them
      if (session.ExecuteGraphWithStreamAsync(2, s, in, out) != ge::SUCCESS || aclrtSynchronizeStream(s) != ACL_SUCCESS) {
        result = "run: " + Messages();
        return;
      }
      float ys[4] = {};
      aclrtMemcpy(ys, sizeof(ys), out[0].GetAddr(), sizeof(ys), ACL_MEMCPY_DEVICE_TO_HOST);
      // x0 = e0 → W row 0 = (-3.5, -2.5) → relu 0,0; x1 = e3 → W row 3 = (2.5, 3.5).
      const float want[4] = {0, 0, 2.5f, 3.5f};
      for (int i = 0; i < 4; ++i) {
        if (ys[i] != want[i]) result = "y[" + std::to_string(i) + "] = " + std::to_string(ys[i]);
      }
      aclrtFree(x);
    }).join();
    aclrtDestroyStream(s);
    return result;
  });
  Check("RemoveGraph frees the graph; removing it again fails", [&] {
    if (session.RemoveGraph(2) != ge::SUCCESS) return "RemoveGraph: " + Messages();
    return Expect(session.RemoveGraph(2) == ge::FAILED, "second RemoveGraph");
  });
  std::remove(path.c_str());
}

}  // namespace

int main() {
  setenv("GEMESH_SIM_DEVICES", "2", 1);
  setenv("GEMESH_SIM_HBM_MB", "64", 1);
  CheckGemm();
  CheckConv();
  CheckBroadcast();
  CheckLatency();
  CheckRuntimeAndRules();
  std::printf("%d passed, %d failed\n", g_passed, g_failed);
  return g_failed == 0 ? 0 : 1;
}
