// The one writer of trace records (docs/trace-format.md). Decoders describe
// what happened (a step's events through StepRecord, a compaction plan, the
// tree after the step, the outputs); the recorder writes header, gc, step,
// keyframe and summary records in the documented order:
//   header, then per step: gc (if one ran), step, keyframe (if due), and at
//   the end a keyframe (unless the last step had one) and the summary.
// Keyframes are written every `keyframe_interval` steps and after the last
// step, for every decoder. The summary's shared figures (model_calls,
// computed_tokens, gc_runs, peak_slots, final_slots, steps) are derived from
// the records written, so they cannot drift from the steps they add up.
// A call out of order is a decoder bug: it throws Error naming the record.
#pragma once
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "core/kv/kv_cache.h"
#include "core/trace/header_record.h"
#include "core/trace/step_record.h"
#include "core/trace/summary_record.h"
#include "core/trace/trace.h"
#include "core/tree/token_tree.h"

namespace triescope {

// What the recorder counted from the records it wrote.
struct RecordedTotals {
  int32_t last_step = -1;        // the highest step number written (0 = prefill)
  int64_t model_calls = 0;       // step records with a target "forward"
  int64_t computed_tokens = 0;   // their "forward.positions" entries
  int64_t gc_runs = 0;           // gc records
  int64_t peak_slots = -1;       // max "kv.peak" (-1: no step recorded kv)
  int64_t final_slots = -1;      // "kv.slots" of the last step record that has kv
  int64_t keyframes = 0;
};

class TraceRecorder {
 public:
  // `sink` may be null: nothing is written and every call is cheap.
  TraceRecorder(TraceSink* sink, int32_t keyframe_interval);

  // True when records are written: guard the building of step fields with it.
  bool on() const { return sink_ != nullptr; }

  // The header: algorithm, backend, the full config, the model's description,
  // its vocabulary (left out when empty) and the kind of the verify objects
  // its step records carry (kVerify*; "" when it verifies nothing).
  void header(const std::string& algorithm, const std::string& backend, json config, json model,
              const std::vector<std::string>& vocab, const std::string& verify_kind = "");
  // The same from the record itself (core/trace/header_record.h).
  void header(HeaderRecord h);
  // The garbage collection that ran at the start of `step`, before its step record.
  void gc(int32_t step, const CompactionPlan& plan);
  // The step record of `step` (fields without kind/step/phase), then the
  // keyframe of `tree` when `step` is a multiple of the keyframe interval.
  // Step numbers never decrease; one step record per step number.
  void step(int32_t step, const std::string& phase, json fields, const TokenTree& tree, int32_t num_slots);
  // A decoder without a token tree (batch beam search: b full rows) writes
  // no keyframes; docs/trace-format.md says which.
  void step(int32_t step, const std::string& phase, json fields);
  // The same from a step's events (core/trace/step_record.h).
  void step(int32_t step, const std::string& phase, StepRecord& events, const TokenTree& tree, int32_t num_slots) {
    this->step(step, phase, events.take(), tree, num_slots);
  }
  void step(int32_t step, const std::string& phase, StepRecord& events) { this->step(step, phase, events.take()); }
  // The final keyframe (unless the last step wrote one) and the summary:
  // `outputs`, `metrics` with the recorded figures written over the
  // decoder's, and the wall time.
  void summary(json outputs, json metrics, double seconds, const TokenTree& tree, int32_t num_slots);
  void summary(json outputs, json metrics, double seconds);  // no tree: no keyframe

  // A model whose cache lives in another engine (Model::engine_state, which
  // record_header installs here): read at every step record that has a "kv",
  // whose fields it adds there ("engine_cells", ...).
  void engine_state(std::function<json()> read) { engine_state_ = std::move(read); }

  const RecordedTotals& totals() const { return totals_; }
  // The header's verify kind ("" before the header or when it verifies nothing).
  const std::string& verify_kind() const { return verify_kind_; }

 private:
  void write(json rec);
  void write_step(int32_t step, const std::string& phase, json fields, const TokenTree* tree, int32_t num_slots);
  void write_summary(json outputs, json metrics, double seconds, const TokenTree* tree, int32_t num_slots);
  void keyframe(int32_t step, const TokenTree& tree, int32_t num_slots);

  TraceSink* sink_;
  int32_t keyframe_interval_;
  bool header_written_ = false, summary_written_ = false;
  int32_t gc_step_ = -1;        // the step number of the last gc record
  int32_t keyframe_step_ = -1;  // the step of the last keyframe
  std::string verify_kind_;
  RecordedTotals totals_;
  std::function<json()> engine_state_;
};

// The figures a summary's metrics carry from the records, recomputed from a
// whole trace (the check of TraceRecorder's bookkeeping).
RecordedTotals trace_recorded_totals(const std::vector<json>& records);
// Writes `t` into `metrics` (the keys TraceRecorder owns).
void recorded_totals_to_metrics(const RecordedTotals& t, json& metrics);
// The summary metrics the recorder owns, by name, in the order it writes them,
// each with its figure in `t` (-1: none recorded): what
// recorded_totals_to_metrics writes and summary_check compares.
void recorded_totals_each(const RecordedTotals& t, const std::function<void(const char* name, int64_t value)>& fn);
// The summary metrics' last step's name (the replay checks it).
inline constexpr const char* kMetricsLastStep = "last_step";

}  // namespace triescope
