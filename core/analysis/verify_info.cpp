#include "core/analysis/verify_info.h"

#include <algorithm>
#include <climits>

#include "core/analysis/verify_kind.h"
#include "core/analysis/verify_read.h"
#include "core/config/json_reader.h"
#include "core/trace/trace.h"

namespace triescope {

using nlohmann::json;

const char* decision_name(Decision d) {
  switch (d) {
    case Decision::drafted: return "drafted";
    case Decision::accepted: return "accepted";
    case Decision::rejected: return "rejected";
    case Decision::untested: return "rejected untested";
    case Decision::parent_rejected: return "parent rejected";
    case Decision::not_verified: return "not verified";
    case Decision::sampled_residual: return "sampled (residual)";
    case Decision::sampled_target: return "sampled (target)";
    case Decision::window: return "window (Jacobi guess)";
    case Decision::pending: return "pending token";
    case Decision::not_computed: return "not computed";
  }
  return "?";
}

int32_t VerifyLayer::count(Decision d) const {
  return static_cast<int32_t>(std::count_if(chips.begin(), chips.end(), [d](const VerifyChip& c) { return c.decision == d; }));
}

int32_t VerifyInfo::total(Decision d) const {
  int32_t n = 0;
  for (const auto& l : layers) n += l.count(d);
  return n;
}

int32_t VerifyInfo::candidate_tokens() const {
  int32_t n = 0;
  for (const auto& c : candidates) n += static_cast<int32_t>(c.tokens.size());
  return n;
}

namespace {

// The registered kind named `name`, or an error naming `field`.
const VerifyKindSpec* kind_or_error(const std::string& name, const char* field, VerifyRead& rd) {
  const VerifyKindSpec* spec = verify_kind_find(name);
  if (!spec) rd.bad(field, "unknown verification kind \"" + name + "\" (registered: " + verify_kind_names() + ")");
  return spec;
}

// A draft step: the header names its kind.
void draft_info(VerifyRead& rd, VerifyInfo& out) {
  const std::string kind = trace_verify_kind(rd.replay.header());
  if (kind.empty()) return rd.bad("phase", "a draft step in a trace whose header names no verify_kind");
  const VerifyKindSpec* spec = kind_or_error(kind, "header.verify_kind", rd);
  if (!spec) return;
  if (!spec->read_draft) return rd.bad("phase", "verification kind \"" + kind + "\" has no draft steps");
  const std::optional<json> next = rd.step_record(rd.view.step + 1);
  if (next && next->value("phase", "") == "verify") out.verify_step = rd.view.step + 1;
  out.iteration = rd.i(rd.view.extra, "iteration", "draft");
  out.kind = spec->name;
  out.draft = true;
  spec->read_draft(rd, out);
}

// v2: the record names its kind; v1: the header's algorithm does (trace_verify_kind).
std::string record_kind(const json& ver, const json& header) {
  const auto k = ver.find("kind");
  if (k == ver.end()) return trace_verify_kind(header);
  return k->is_string() ? k->get<std::string>() : std::string("?");
}

}  // namespace

VerifyInfo verify_info(const StepView& v, const TraceReplay& replay) {
  VerifyInfo out;
  VerifyRead rd{v, replay, out.error, "step " + std::to_string(v.step)};
  const json& x = v.extra;
  if (!x.is_object()) return out;
  if (v.phase == "draft") {
    draft_info(rd, out);
    return out;
  }
  if (!x.contains("verify")) return out;
  const json& ver = x["verify"];
  if (!ver.is_object()) {
    rd.bad("verify", "expected an object");
    if (const VerifyKindSpec* spec = verify_kind_find(trace_verify_kind(replay.header()))) out.kind = spec->name;
    return out;
  }
  const VerifyKindSpec* spec = kind_or_error(record_kind(ver, replay.header()), "verify.kind", rd);
  if (!spec) return out;
  out.kind = spec->name;
  spec->read_verify(rd, ver, out);
  return out;
}

AcceptanceSeries acceptance_series(const TraceReplay& replay) {
  AcceptanceSeries s;
  const TraceRecords records = replay.records_view();
  json scratch;
  for (size_t i = 0; i < records.size(); ++i) {
    if (replay.index().kind(i) != TraceRecordKind::step) continue;
    const json& r = records.at(i, scratch);
    if (!r.is_object() || !r.contains("verify") || !r["verify"].is_object()) continue;
    const json& ver = r["verify"];
    const int32_t step = r.contains("step") ? static_cast<int32_t>(json_int_in(r["step"], 0, INT32_MAX).value_or(-1)) : -1;
    if (const VerifyKindSpec* spec = verify_kind_find(record_kind(ver, replay.header()))) spec->accumulate(ver, step, s);
  }
  return s;
}

}  // namespace triescope
