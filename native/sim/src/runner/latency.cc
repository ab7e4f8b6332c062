#include "runner/latency.h"

#include <algorithm>
#include <cstdlib>
#include <iterator>
#include <map>
#include <sstream>

#include "common/sim_errors.h"

namespace gemesh::sim {
namespace {
double Number(const std::string &s, const std::string &spec) {
  char *end = nullptr;
  const double v = std::strtod(s.c_str(), &end);
  if (s.empty() || *end != '\0' || v < 0) {
    throw SimError("latency spec [" + spec + "] is invalid: [" + s + "] is not a non-negative number");
  }
  return v;
}

constexpr const char *kContended = "contended:";

// "a=A,fp32=W32,fp16=W16[,span=S]": fp32 and fp16 are required, a defaults to 0, span to no limit.
void ParseContended(const std::string &spec, const std::string &body, double *a, double *fp32, double *fp16,
                    double *span) {
  std::map<std::string, double> values;
  std::stringstream items(body);
  std::string item;
  while (std::getline(items, item, ',')) {
    const size_t eq = item.find('=');
    if (eq == std::string::npos) throw SimError("latency spec [" + spec + "] is invalid: [" + item + "] is not key=value");
    const std::string key = item.substr(0, eq);
    if (key != "a" && key != "fp32" && key != "fp16" && key != "span") {
      throw SimError("latency spec [" + spec + "] is invalid: unknown key [" + key + "] (keys: a, fp32, fp16, span)");
    }
    if (!values.emplace(key, Number(item.substr(eq + 1), spec)).second) {
      throw SimError("latency spec [" + spec + "] is invalid: [" + key + "] is given twice");
    }
  }
  for (const char *required : {"fp32", "fp16"}) {
    if (values.count(required) == 0) {
      throw SimError("latency spec [" + spec + "] is invalid: [" + required + "] (core·µs per row) is required");
    }
  }
  *a = values.count("a") != 0 ? values["a"] : 0;
  *fp32 = values["fp32"];
  *fp16 = values["fp16"];
  *span = values.count("span") != 0 ? values["span"] : 0;
}
}  // namespace

LatencyModel LatencyModel::Parse(const std::string &spec) {
  LatencyModel m;
  std::string s;
  for (const char c : spec) {
    if (c != ' ') s += c;
  }
  if (s.rfind(kContended, 0) == 0) {
    m.contended_ = true;
    ParseContended(spec, s.substr(std::string(kContended).size()), &m.a_us_, &m.fp32_core_us_, &m.fp16_core_us_,
                   &m.span_);
    return m;
  }
  if (s.find('=') != std::string::npos) {
    std::stringstream items(s);
    std::string item;
    while (std::getline(items, item, ',')) {
      const size_t eq = item.find('=');
      if (eq == std::string::npos) throw SimError("latency spec [" + spec + "] is invalid: [" + item + "] is not batch=us");
      const double batch = Number(item.substr(0, eq), spec);
      if (batch < 1 || batch != static_cast<int64_t>(batch)) {
        throw SimError("latency spec [" + spec + "] is invalid: batch [" + item.substr(0, eq) + "] is not a positive integer");
      }
      m.table_[static_cast<int64_t>(batch)] = Number(item.substr(eq + 1), spec);
    }
    if (m.table_.empty()) throw SimError("latency spec [" + spec + "] is empty");
    return m;
  }
  const size_t plus = s.find('+');
  if (plus == std::string::npos) {
    m.a_us_ = Number(s, spec);
    return m;
  }
  m.a_us_ = Number(s.substr(0, plus), spec);
  std::string b = s.substr(plus + 1);
  const size_t star = b.find('*');
  if (star != std::string::npos) {
    if (b.substr(star + 1) != "batch") throw SimError("latency spec [" + spec + "] is invalid: expected A+B*batch");
    b = b.substr(0, star);
  }
  m.b_us_ = Number(b, spec);
  return m;
}

double LatencyModel::CoreMicros(int64_t rows, bool half) const {
  return static_cast<double>(rows) * (half ? fp16_core_us_ : fp32_core_us_);
}

double LatencyModel::MicrosFor(int64_t batch) const {
  if (table_.empty()) return a_us_ + b_us_ * static_cast<double>(batch);
  if (table_.size() == 1) return table_.begin()->second;
  const auto exact = table_.find(batch);
  if (exact != table_.end()) return exact->second;
  // Interpolate between the neighbours, or extend the first / last segment.
  auto hi = table_.upper_bound(batch);
  if (hi == table_.begin()) ++hi;
  if (hi == table_.end()) --hi;
  auto lo = std::prev(hi);
  const double t = static_cast<double>(batch - lo->first) / static_cast<double>(hi->first - lo->first);
  return std::max(0.0, lo->second + t * (hi->second - lo->second));
}

}  // namespace gemesh::sim
