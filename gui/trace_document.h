// A loaded trace: the replay over its records (a file is streamed: records
// are parsed when a step needs them, never held all at once) and per-step
// figures the plots need. Built off the UI thread (QtConcurrent) and then shared read-only.
#pragma once
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <vector>

#include "core/trace/trace.h"
#include "core/trace/trace_replay.h"

namespace triescope::gui {

// One step's figures for the plots (-1: not recorded), as StepStats gives them.
struct StepStat {
  int32_t step = 0;
  int64_t slots = -1, peak = -1, batch_slots = -1, live_beams = -1;
  double seconds = -1;  // per-step wall time when the backend recorded one
  bool gc = false;
  // The step's gc record follows its step record (lookahead compacts after
  // the pass): the forward's slots are the layout BEFORE this gc.
  bool gc_after_forward = false;
};

// StepStat of every step (index = step: steps are 0 .. last), one column per
// figure, a column allocated only when some step records that figure, its
// numbers as int32 (saturated; the replay refuses kv beyond kTraceMaxSlots)
// and seconds as float. A trace of millions of steps that records nothing
// but the steps costs nothing here; one that records kv slots 4 bytes a step.
class StepStats {
 public:
  explicit StepStats(size_t steps = 0) : size_(steps) {}
  size_t size() const { return size_; }
  bool empty() const { return size_ == 0; }
  StepStat operator[](size_t i) const;
  void set_kv(size_t i, int64_t slots, int64_t peak, int64_t batch_slots, int64_t live_beams);
  void set_seconds(size_t i, double seconds);
  void set_gc(size_t i, bool after_forward);
  bool any_gc_after_forward() const { return !gc_after_forward_.empty(); }
  size_t memory_bytes() const;

  struct const_iterator {
    const StepStats* stats;
    size_t i;
    StepStat operator*() const { return (*stats)[i]; }
    const_iterator& operator++() { return ++i, *this; }
    bool operator==(const const_iterator& o) const { return i == o.i; }
  };
  const_iterator begin() const { return {this, 0}; }
  const_iterator end() const { return {this, size_}; }

 private:
  size_t size_ = 0;
  std::vector<int32_t> kv_[4];  // slots, peak, batch_slots, live_beams; empty: all -1
  std::vector<float> seconds_;  // empty: all -1
  std::vector<bool> gc_, gc_after_forward_;  // empty: all false
};

struct TraceDocument {
  std::string origin;  // file path, or "live: <sample>"
  std::unique_ptr<TraceReplay> replay;
  StepStats stats;  // [replay->steps()]
  int32_t prompt_len = 0;       // header config.prompt length, 0 if unknown
  double load_seconds = 0;
  bool preview = false;  // only a prefix of the file; the full document follows
  std::string warning;   // the file ended mid-record: opened up to its last whole record
  // Top-level fields seen in the step records ("constraint", "verify", ...):
  // which panes have something to show, without reading the records again.
  std::set<std::string> step_fields;
  std::string algorithm() const { return replay->header_record().algorithm; }
  std::string backend() const { return replay->header_record().backend.empty() ? std::string("?") : replay->header_record().backend; }
  // Index of `step` in replay->steps(), -1 if absent.
  int32_t step_index(int32_t step) const;
};

using TraceDocumentPtr = std::shared_ptr<const TraceDocument>;

// A trace file, streamed (TraceReplay::open). Throws triescope::Error naming
// the file and the field.
TraceDocumentPtr trace_document_load(const std::string& path);
// The first `max_bytes` of a trace, cut at a record boundary, parsed by the
// same core reader: a preview the window paints while the whole file loads
// in the background (docs/benchmarks-gui.md). Returns null when the file is
// not larger than `max_bytes` (the full load is as fast).
TraceDocumentPtr trace_document_load_preview(const std::string& path, size_t max_bytes = size_t{2} << 20);
TraceDocumentPtr trace_document_from_records(std::vector<json> records, const std::string& origin);

// Runs a sample in-process through core's run_sample (live mode). `edit` may
// change the parsed sample JSON (beam width, gc interval, seed...) before it
// is validated; errors name the sample file and the field.
TraceDocumentPtr trace_document_run_sample(const std::string& sample_path, const std::function<void(json&)>& edit = {},
                                           std::string* report = nullptr, TraceSink* also = nullptr);

// A sink the decoder (worker thread) writes to while the UI thread takes
// snapshots of the records so far: live mode steps as the sample decodes.
class LiveTraceSink final : public TraceSink {
 public:
  void record(json rec) override;
  // Copy of the records, or empty when nothing was added since `have`.
  std::vector<json> snapshot_if_grown(size_t have);

 private:
  std::mutex m_;
  std::vector<json> records_;
};

}  // namespace triescope::gui
