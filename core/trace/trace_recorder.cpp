#include "core/trace/trace_recorder.h"

#include <algorithm>

#include "core/common/error.h"
#include "core/trace/forward_record.h"
#include "core/trace/kv_record.h"

namespace triescope {

namespace {

int64_t int_at(const json& obj, const char* key, int64_t fallback) {
  if (!obj.is_object()) return fallback;
  const auto it = obj.find(key);
  return it != obj.end() && it->is_number_integer() ? it->get<int64_t>() : fallback;
}

// What one step record adds to the totals (shared by the recorder and the
// whole-trace recount, so both read a record the same way).
void count_step(const json& rec, RecordedTotals& t) {
  t.last_step = std::max(t.last_step, static_cast<int32_t>(int_at(rec, "step", 0)));
  const auto fwd = rec.find(kForwardField);
  if (fwd != rec.end() && fwd->is_object()) {
    ++t.model_calls;
    t.computed_tokens += static_cast<int64_t>(forward_record_positions(*fwd));
  }
  const auto kv = rec.find(kKvField);
  if (kv != rec.end() && kv->is_object()) {
    const KvRecord k = KvRecord::from_json(*kv, "step " + std::to_string(int_at(rec, "step", 0)) + ": " + kKvField);
    t.peak_slots = std::max(t.peak_slots, k.peak);
    t.final_slots = k.slots;
  }
}

}  // namespace

TraceRecorder::TraceRecorder(TraceSink* sink, int32_t keyframe_interval)
    : sink_(sink), keyframe_interval_(keyframe_interval) {}

void TraceRecorder::write(json rec) {
  TS_CHECK(header_written_ || rec["kind"] == "header", "trace recorder: a " << rec["kind"].get<std::string>() << " record before the header");
  TS_CHECK(!summary_written_, "trace recorder: a " << rec["kind"].get<std::string>() << " record after the summary");
  sink_->record(std::move(rec));
}

void TraceRecorder::header(const std::string& algorithm, const std::string& backend, json config, json model,
                           const std::vector<std::string>& vocab, const std::string& verify_kind) {
  if (!sink_) return;
  header({.algorithm = algorithm, .backend = backend, .config = std::move(config), .model = std::move(model), .verify_kind = verify_kind,
          .vocab = vocab});
}

void TraceRecorder::header(HeaderRecord h) {
  if (!sink_) return;
  TS_CHECK(!header_written_, "trace recorder: a second header");
  header_written_ = true;
  verify_kind_ = h.verify_kind;
  sink_->record(h.to_json());
}

void TraceRecorder::gc(int32_t step, const CompactionPlan& plan) {
  if (!sink_) return;
  TS_CHECK(step > totals_.last_step,
           "trace recorder: gc of step " << step << " after the step record of step " << totals_.last_step
                                         << " (a gc record comes before its step's record)");
  TS_CHECK(step != gc_step_, "trace recorder: two gc records in step " << step);
  gc_step_ = step;
  ++totals_.gc_runs;
  write(trace_gc_record(step, plan));
}

void TraceRecorder::step(int32_t step, const std::string& phase, json fields, const TokenTree& tree, int32_t num_slots) {
  write_step(step, phase, std::move(fields), &tree, num_slots);
}

void TraceRecorder::step(int32_t step, const std::string& phase, json fields) { write_step(step, phase, std::move(fields), nullptr, 0); }

void TraceRecorder::write_step(int32_t step, const std::string& phase, json fields, const TokenTree* tree, int32_t num_slots) {
  if (!sink_) return;
  TS_CHECK(step > totals_.last_step, "trace recorder: step " << step << " (" << phase << ") after step " << totals_.last_step
                                                              << ": step numbers increase, one step record each");
  TS_CHECK(step > 0 || phase == "prefill", "trace recorder: step 0 must be the prefill, got phase " << phase);
  TS_CHECK(fields.is_object(), "trace recorder: step " << step << ": fields must be an object");
  const auto verify = fields.find("verify");
  TS_CHECK(verify == fields.end() || (verify->is_object() && !verify_kind_.empty() && verify->value("kind", "") == verify_kind_),
           "trace recorder: step " << step << ": a verify object needs the kind the header names (\"" << verify_kind_ << "\")");
  json rec = {{"kind", "step"}, {"step", step}, {"phase", phase}};
  rec.update(fields);
  if (const auto kv = rec.find(kKvField); engine_state_ && kv != rec.end() && kv->is_object())
    if (json engine = engine_state_(); engine.is_object())
      for (auto& [key, value] : engine.items()) {
        TS_CHECK(!kv->contains(key), "trace recorder: step " << step << ": " << kKvField << "." << key << " comes from the decoder and the engine");
        (*kv)[key] = value;
      }
  count_step(rec, totals_);
  write(std::move(rec));
  if (tree && keyframe_interval_ > 0 && step > 0 && step % keyframe_interval_ == 0) keyframe(step, *tree, num_slots);
}

void TraceRecorder::keyframe(int32_t step, const TokenTree& tree, int32_t num_slots) {
  ++totals_.keyframes;
  keyframe_step_ = step;
  write(trace_keyframe(step, tree, num_slots));
}

void TraceRecorder::summary(json outputs, json metrics, double seconds, const TokenTree& tree, int32_t num_slots) {
  write_summary(std::move(outputs), std::move(metrics), seconds, &tree, num_slots);
}

void TraceRecorder::summary(json outputs, json metrics, double seconds) {
  write_summary(std::move(outputs), std::move(metrics), seconds, nullptr, 0);
}

void TraceRecorder::write_summary(json outputs, json metrics, double seconds, const TokenTree* tree, int32_t num_slots) {
  if (!sink_) return;
  TS_CHECK(totals_.last_step >= 0, "trace recorder: a summary with no step record");
  TS_CHECK(gc_step_ <= totals_.last_step, "trace recorder: gc of step " << gc_step_ << " has no step record");
  if (tree && keyframe_step_ != totals_.last_step) keyframe(totals_.last_step, *tree, num_slots);
  SummaryRecord s{.outputs = std::move(outputs), .metrics = metrics.is_object() ? std::move(metrics) : json::object(), .seconds = seconds};
  s.metrics.erase(kSummarySeconds);  // wall time is not part of the reproducible trace
  recorded_totals_to_metrics(totals_, s.metrics);
  write(s.to_json());
  summary_written_ = true;
}

RecordedTotals trace_recorded_totals(const std::vector<json>& records) {
  RecordedTotals t;
  for (const json& r : records) {
    const std::string kind = r.value("kind", "");
    if (kind == "step") count_step(r, t);
    else if (kind == "gc") ++t.gc_runs;
    else if (kind == "keyframe") ++t.keyframes;
  }
  return t;
}

void recorded_totals_each(const RecordedTotals& t, const std::function<void(const char* name, int64_t value)>& fn) {
  fn(kMetricsLastStep, t.last_step);
  fn("model_calls", t.model_calls);
  fn("computed_tokens", t.computed_tokens);
  fn("gc_runs", t.gc_runs);
  fn("peak_slots", t.peak_slots);
  fn("final_slots", t.final_slots);
}

void recorded_totals_to_metrics(const RecordedTotals& t, json& metrics) {
  // -1: nothing recorded (the slot figures when no step recorded kv); the
  // counts are never negative, and a summary follows a step record.
  recorded_totals_each(t, [&](const char* name, int64_t value) {
    if (value >= 0) metrics[name] = value;
  });
}

}  // namespace triescope
