#include "core/trace/trace_diff.h"

#include <algorithm>
#include <cmath>
#include <sstream>

#include "core/trace/header_record.h"
#include "core/trace/summary_record.h"

namespace triescope {

using nlohmann::json;

std::string TraceDivergence::describe() const {
  std::ostringstream os;
  os << "first divergence at ";
  if (step >= 0) os << "step " << step;
  else os << kind;
  os << " (record " << record << ", kind " << kind;
  if (!phase.empty()) os << ", phase " << phase;
  os << "), field " << (field.empty() ? std::string("<record>") : field);
  if (index >= 0) os << ", index " << index;
  os << ": A = " << a << ", B = " << b;
  return os.str();
}

bool trace_field_is_provenance(const std::string& record_kind, bool top_level, const std::string& key) {
  if (key == kSummarySeconds) return true;
  if (record_kind != "header") return false;
  if (top_level && HeaderRecord::is_provenance(key)) return true;
  // A file's name says where an input was read from; its content hash, a
  // field of its own, is compared.
  auto ends_with = [&](const char* tail) {
    const std::string t(tail);
    return key.size() > t.size() && key.compare(key.size() - t.size(), t.size(), t) == 0;
  };
  return key == "path" || key == "file" || key == "dir" || key == "origin" || ends_with("_path") || ends_with("_file") ||
         ends_with("_dir");
}

namespace {

struct Walker {
  const TraceDiffOptions& opt;
  std::vector<TraceDivergence>& out;
  size_t limit;
  TraceDivergence base;
  std::vector<TracePathStep> path;  // where walk() is now

  bool full() const { return out.size() >= limit; }

  void emit(const std::string& field, int64_t index, std::string a, std::string b) {
    if (full()) return;
    TraceDivergence d = base;
    d.field = field;
    d.path = path;
    d.index = index;
    d.a = std::move(a);
    d.b = std::move(b);
    out.push_back(std::move(d));
  }

  static bool hex_bit(const std::string& s, int64_t bit) {
    const size_t byte = static_cast<size_t>(bit / 8);
    if (2 * byte + 1 >= s.size()) return false;
    auto val = [](char c) { return c <= '9' ? c - '0' : (c | 0x20) - 'a' + 10; };
    const int v = val(s[2 * byte]) * 16 + val(s[2 * byte + 1]);
    return (v >> (bit % 8)) & 1;
  }

  void mask_row(const std::string& field, const std::string& a, const std::string& b) {
    if (a.size() != b.size()) {
      emit(field, -1, std::to_string(a.size() * 4) + " bits", std::to_string(b.size() * 4) + " bits");
      return;
    }
    for (int64_t bit = 0; bit < static_cast<int64_t>(a.size() * 4) && !full(); ++bit)
      if (hex_bit(a, bit) != hex_bit(b, bit)) emit(field, bit, hex_bit(a, bit) ? "1" : "0", hex_bit(b, bit) ? "1" : "0");
  }

  void walk(const json& a, const json& b, const std::string& field, bool in_mask_rows) {
    if (full()) return;
    if (a.is_number() && b.is_number()) {
      if (a.is_number_float() || b.is_number_float()) {
        const double x = a.get<double>(), y = b.get<double>();
        const double scale = std::max({1.0, std::fabs(x), std::fabs(y)});
        if (!(std::fabs(x - y) <= opt.tolerance * scale) && !(x == y)) emit(field, -1, a.dump(), b.dump());
      } else if (a != b) {
        emit(field, -1, a.dump(), b.dump());
      }
      return;
    }
    if (a.type() != b.type()) {
      emit(field, -1, a.dump(), b.dump());
      return;
    }
    if (a.is_object()) {
      std::vector<std::string> keys;
      for (auto& [k, v] : a.items()) keys.push_back(k);
      for (auto& [k, v] : b.items())
        if (!a.contains(k)) keys.push_back(k);
      for (const auto& k : keys) {
        if (trace_field_is_provenance(base.kind, field.empty(), k)) continue;
        const std::string f = field.empty() ? k : field + "." + k;
        path.push_back({k, -1});
        if (!a.contains(k)) emit(f, -1, "<missing>", b[k].dump());
        else if (!b.contains(k)) emit(f, -1, a[k].dump(), "<missing>");
        else walk(a[k], b[k], f, k == "rows" && field.size() >= 4 && field.compare(field.size() - 4, 4, "mask") == 0);
        path.pop_back();
      }
      return;
    }
    if (a.is_array()) {
      if (a.size() != b.size()) {
        path.push_back({"size", -1});
        emit(field + ".size", -1, std::to_string(a.size()), std::to_string(b.size()));
        path.pop_back();
      }
      const size_t n = std::min(a.size(), b.size());
      for (size_t i = 0; i < n && !full(); ++i) {
        const std::string f = field + "[" + std::to_string(i) + "]";
        path.push_back({"", static_cast<int64_t>(i)});
        if (in_mask_rows && a[i].is_string() && b[i].is_string()) mask_row(f, a[i].get<std::string>(), b[i].get<std::string>());
        else walk(a[i], b[i], f, false);
        path.pop_back();
      }
      return;
    }
    if (a != b) emit(field, -1, a.dump(), b.dump());
  }
};

}  // namespace

std::vector<TraceDivergence> trace_diff_all(const TraceRecords& a, const TraceRecords& b, const TraceDiffOptions& opt, size_t limit) {
  std::vector<TraceDivergence> out;
  Walker w{opt, out, limit, {}, {}};
  const size_t n = std::min(a.size(), b.size());
  json scratch_a, scratch_b;
  for (size_t i = 0; i < n && !w.full(); ++i) {
    const json& ra = a.at(i, scratch_a);
    const json& rb = b.at(i, scratch_b);
    w.base = TraceDivergence{};
    w.base.record = i;
    w.base.kind = ra.value("kind", std::string("?"));
    w.base.step = ra.contains("step") && ra["step"].is_number_integer() ? ra["step"].get<int64_t>() : -1;
    w.base.phase = ra.contains("phase") && ra["phase"].is_string() ? ra["phase"].get<std::string>() : "";
    w.walk(ra, rb, "", false);
  }
  if (a.size() != b.size() && !w.full()) {
    w.base = TraceDivergence{};
    w.base.record = n;
    w.base.kind = (n < a.size() ? a.at(n, scratch_a) : b.at(n, scratch_b)).value("kind", std::string("?"));
    w.emit("<records>", -1, std::to_string(a.size()) + " records", std::to_string(b.size()) + " records");
  }
  return out;
}

std::vector<TraceDivergence> trace_diff_all(const std::vector<json>& a, const std::vector<json>& b, const TraceDiffOptions& opt,
                                            size_t limit) {
  return trace_diff_all(TraceRecords(a), TraceRecords(b), opt, limit);
}

std::optional<TraceDivergence> trace_diff(const std::vector<json>& a, const std::vector<json>& b,
                                          const TraceDiffOptions& opt) {
  auto all = trace_diff_all(a, b, opt, 1);
  if (all.empty()) return std::nullopt;
  return all.front();
}

}  // namespace triescope
