// Rebuilds the state of a decode at any step from a trace: the nearest
// keyframe at or before the step, then the gc and step records after it.
// The CLI's `inspect` and the GUI read traces through this one class.
#pragma once
#include <algorithm>
#include <cstdint>
#include <memory>
#include <optional>
#include <iterator>
#include <set>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/mask/bit_mask.h"
#include "core/trace/forward_record.h"
#include "core/trace/header_record.h"
#include "core/trace/kv_record.h"
#include "core/trace/summary_record.h"
#include "core/trace/trace_index.h"
#include "core/tree/token_tree.h"

namespace triescope {

struct StepView {
  int32_t step = 0;
  std::string phase;
  std::vector<TreeNode> nodes;          // the whole tree after this step (index = node id)
  std::vector<int32_t> slot_to_node;    // [num_slots] node in each slot, -1 if none
  std::vector<int32_t> added;           // nodes added by this step
  std::vector<std::pair<int32_t, int32_t>> gc_moves;  // (old slot, new slot) if a GC ran in this step
  int32_t gc_slots_before = -1;
  std::optional<ForwardView> forward;   // the forward pass run at the end of this step
  std::optional<KvRecord> kv;           // the step record's kv figures (nullopt when it has none)
  nlohmann::json chosen;                // chosen beams
  nlohmann::json extra;                 // algorithm-specific fields of the step record (constraint, verify...)
};

// The step numbers of a trace: 0 (the prefill) .. last, one step record
// each, none skipped (TraceReplay refuses anything else), so a count, not a
// vector of every number. A random-access range of int32_t.
class TraceSteps {
 public:
  class iterator {
   public:
    using iterator_category = std::random_access_iterator_tag;
    using iterator_concept = std::random_access_iterator_tag;
    using value_type = int32_t;
    using difference_type = std::ptrdiff_t;
    using pointer = void;
    using reference = int32_t;
    iterator() = default;
    explicit iterator(int32_t step) : step_(step) {}
    int32_t operator*() const { return step_; }
    int32_t operator[](difference_type n) const { return static_cast<int32_t>(step_ + n); }
    iterator& operator++() { return ++step_, *this; }
    iterator operator++(int) { return iterator(step_++); }
    iterator& operator--() { return --step_, *this; }
    iterator operator--(int) { return iterator(step_--); }
    iterator& operator+=(difference_type n) { return step_ = static_cast<int32_t>(step_ + n), *this; }
    iterator& operator-=(difference_type n) { return step_ = static_cast<int32_t>(step_ - n), *this; }
    friend iterator operator+(iterator it, difference_type n) { return it += n; }
    friend iterator operator+(difference_type n, iterator it) { return it += n; }
    friend iterator operator-(iterator it, difference_type n) { return it -= n; }
    friend difference_type operator-(iterator a, iterator b) { return difference_type{a.step_} - b.step_; }
    auto operator<=>(const iterator&) const = default;

   private:
    int32_t step_ = 0;
  };
  TraceSteps() = default;
  explicit TraceSteps(int32_t count) : count_(count) {}
  iterator begin() const { return iterator(0); }
  iterator end() const { return iterator(count_); }
  size_t size() const { return static_cast<size_t>(count_); }
  bool empty() const { return count_ == 0; }
  int32_t front() const { return 0; }
  int32_t back() const { return count_ - 1; }
  int32_t operator[](size_t i) const { return static_cast<int32_t>(i); }
  bool operator==(const TraceSteps&) const = default;
  bool operator==(const std::vector<int32_t>& v) const { return std::equal(begin(), end(), v.begin(), v.end()); }

 private:
  int32_t count_ = 0;
};
static_assert(std::random_access_iterator<TraceSteps::iterator>);

class TraceReplay {
 public:
  // `records` as returned by trace_read (header first). `origin` names errors.
  TraceReplay(std::vector<nlohmann::json> records, std::string origin);
  // A trace file streamed (TraceFileIndex): records are located once and
  // parsed when a step needs them, so memory is bounded by the biggest record
  // and the tree, not the file. `warning` as for trace_read.
  static TraceReplay open(const std::string& path, std::string* warning = nullptr);

  // The header record as written (for readers that keep or show it whole);
  // its fields are read through header_record().
  const nlohmann::json& header() const { return file_ ? file_->header() : records_.front(); }
  // The header, typed and checked (core/trace/header_record.h).
  const HeaderRecord& header_record() const { return header_record_; }
  // The summary record as written (null when the trace has none), and typed
  // (core/trace/summary_record.h; nullopt when none).
  const nlohmann::json* summary() const;
  std::optional<SummaryRecord> summary_record() const;
  // Every record in memory; a streamed replay (open()) holds none: Error.
  const std::vector<nlohmann::json>& records() const;
  // True for a replay from open() on a regular file: records are parsed
  // from the file when asked for, never held all at once.
  bool streamed() const { return file_ != nullptr; }
  // The records one at a time, in memory or streamed (the way to walk all of
  // them whatever the trace's size), and what the index knows of each
  // (kind, step, line) without parsing it.
  TraceRecords records_view() const { return file_ ? TraceRecords(*file_) : TraceRecords(records_); }
  const TraceRecordIndex& index() const { return file_ ? file_->index() : index_; }
  // The records of `step` (its gc, step and keyframe records, in file order),
  // from memory or parsed from the file; empty when `step` has no step record.
  std::vector<nlohmann::json> records_of_step(int32_t step) const;
  // Parses every record a replay of all steps does not (keyframes, the
  // summary, records after the last step record), so a streamed reader
  // refuses what trace_read would: `check` reads every record once this way.
  // The summary's metrics.last_step is checked here too (the in-memory
  // constructor checks it at once). Nothing for a replay in memory
  // (trace_read parsed them all).
  void parse_unreplayed_records() const;
  // Steps whose gc record follows their step record (trace_gc_after_forward_steps),
  // from the index: no record parsed.
  std::set<int32_t> gc_after_forward_steps() const;
  // Whether `step` is one of them: a look at its own records only.
  bool gc_after_forward(int32_t step) const;
  // Bytes of the records at(step) reads, from the keyframe it starts from to
  // the step's last record (0 for a trace in memory): what a reader may want
  // to know before it asks.
  uint64_t replay_bytes(int32_t step) const;
  const std::vector<std::string>& vocab() const { return header_record_.vocab; }
  const std::string& origin() const { return origin_; }  // the file errors name
  std::string token_text(int32_t token) const;
  // Steps present in the trace, ascending (0 = prefill).
  TraceSteps steps() const { return TraceSteps(num_steps_); }
  int32_t last_step() const { return num_steps_ == 0 ? 0 : num_steps_ - 1; }
  // State after all records of `step`. Throws Error on a malformed record.
  StepView at(int32_t step) const;
  // The same view as at(step) (every field, the same errors), computed from
  // `from` = at(from.step) of this replay (or a view advance() returned) by
  // replaying only the records after from's step: O(records in between)
  // instead of O(records since the keyframe). Falls back to at(step) when
  // `step` is not after `from`, a keyframe lies in [from.step, step) (at()
  // starts from it). What
  // makes stepping forward through a big trace cheap (docs/benchmarks-gui.md).
  // Only from.step and from.nodes are read.
  StepView advance(const StepView& from, int32_t step) const;
  // advance() into `out` (not `from`), reusing out's buffers (nodes, the
  // forward pass's vectors and mask words): a view dropped anyway, so a big
  // mask is not allocated and faulted in afresh every step.
  void advance_into(const StepView& from, int32_t step, StepView& out) const;

 private:
  // Nothing here grows with the records but records_ (a trace in memory) and
  // the packed index: a streamed trace of millions of records costs a few
  // bytes a record (docs/benchmarks.md, "Traces at scale").
  std::vector<nlohmann::json> records_;           // in memory; empty when streamed
  std::shared_ptr<const TraceFileIndex> file_;     // streamed: where each record is, and its index
  TraceRecordIndex index_;                         // in memory: [records] kind, step, line of each
  mutable std::optional<nlohmann::json> summary_;  // streamed: the summary, parsed on demand
  std::string origin_;
  HeaderRecord header_record_;
  int32_t num_steps_ = 0;                // step records: steps 0 .. num_steps_ - 1
  std::vector<int32_t> keyframe_steps_;  // ascending, each once
  size_t summary_record_ = SIZE_MAX;     // the last summary record, SIZE_MAX for none
  TraceReplay() = default;
  // The first record after `step`'s records (where at() stops); records are
  // in ascending step order (index_records checks). Steps 0 .. step each have
  // a step record, so the header and the next step + 1 records are all at or
  // before `step`: the search starts there (one look for a record a step).
  size_t step_end(int32_t step) const {
    const TraceRecordIndex& idx = index();
    const size_t lo = step < 0 ? 1 : static_cast<size_t>(step) + 2;
    return idx.upper_bound_step(step, std::min(idx.size(), lo));
  }
  // The last keyframe record of the last keyframe step before `step`; 0 for none.
  size_t keyframe_before(int32_t step) const;
  // Record i: a reference into records_, or parsed from the file into `scratch`.
  const nlohmann::json& record(size_t i, nlohmann::json& scratch) const;
  std::string where(size_t i) const;  // "origin:line"
  // The records from `start` up to v.step's last one applied to v.nodes, the
  // step's own fields filled in, the result checked.
  void replay_into(StepView& v, size_t start) const;
  void replay_records(StepView& v, size_t start) const;  // replay_into without the reader boundary
  // v.nodes from the last keyframe before `step`; `start` = the record after it.
  void load_keyframe_before(StepView& v, int32_t step, size_t& start) const;
  void index_records();  // the constructors' pass over index(): num_steps_, keyframe_steps_, summary_record_
};

}  // namespace triescope
