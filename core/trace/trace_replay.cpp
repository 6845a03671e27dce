#include "core/trace/trace_replay.h"

#include <algorithm>
#include <climits>
#include <filesystem>

#include "core/common/error.h"
#include "core/config/json_reader.h"
#include "core/trace/gc_record.h"
#include "core/trace/keyframe_record.h"
#include "core/trace/trace.h"
#include "core/trace/trace_recorder.h"

namespace triescope {

using nlohmann::json;

namespace {

// j[key] as an integer in [lo, hi]; errors name the record and the field.
int32_t get_i32(const json& j, const char* key, const std::string& where, int32_t lo = INT32_MIN, int32_t hi = INT32_MAX) {
  TS_CHECK(j.is_object() && j.contains(key) && j[key].is_number_integer(), where << ": field " << key << " must be an integer");
  const auto x = json_int_in(j[key], lo, hi);
  TS_CHECK(x, where << ": field " << key << " must be in [" << lo << ", " << hi << "], got " << json_brief(j[key]));
  return static_cast<int32_t>(*x);
}

// Whether some record of `index` at or after `from` is the step record of `step`.
bool has_step_record(const TraceRecordIndex& index, size_t from, int32_t step) {
  for (size_t i = from; i < index.size(); ++i)
    if (index.kind(i) == TraceRecordKind::step && index.step(i) == step) return true;
  return false;
}

// One step record per step number, 0 (the prefill) first, in order
// (docs/trace-format.md): `s` is the record (index i) after the step records
// of steps 0 .. seen - 1. A record that comes later is not missing but out
// of order: the ascending-order check names it there.
void step_number_check(int32_t seen, int32_t s, const TraceRecordIndex& index, size_t i, const std::string& where) {
  const int32_t want = seen;
  if (s == want) return;
  if (seen > 0 && s == seen - 1)
    TS_FAIL(where << ": a second step record for step " << s << ": one step record per step number");
  if (s < want) TS_FAIL(where << ": step record of step " << s << " after step " << seen - 1 << ": step records are in increasing step order");
  if (has_step_record(index, i + 1, want)) return;
  TS_FAIL(where << ": step record of step " << s << " where step " << want << " comes next: the step record of step " << want
                << (s - want > 1 ? " (and the ones up to step " + std::to_string(s - 1) + ")" : std::string()) << " is missing");
}

// A summary's fields have their types (SummaryRecord), and its
// metrics.last_step, when it has one, names the last step record before it
// (`last`, -1 for none): a dropped last step record leaves no other trace.
void summary_last_step_check(const json& r, int32_t last, const std::string& where) {
  const SummaryRecord summary = SummaryRecord::from_json(r, where);
  if (!summary.metrics.contains(kMetricsLastStep)) return;
  const int32_t s = get_i32(summary.metrics, kMetricsLastStep, where + ": summary " + kSummaryMetrics, -1);
  TS_CHECK(s == last, where << ": summary field " << kSummaryMetrics << "." << kMetricsLastStep << " = " << s << ", but the last step record is "
                            << (last < 0 ? std::string("none") : "step " + std::to_string(last))
                            << ": a step record is missing or one too many");
}

}  // namespace

TraceReplay::TraceReplay(std::vector<json> records, std::string origin)
    : records_(std::move(records)), origin_(std::move(origin)) {
  reader_boundary(origin_, [&] {
    TS_CHECK(!records_.empty() && records_.front().value("kind", "") == "header", origin_ << ": no header record");
    for (size_t i = 0; i < records_.size(); ++i) {
      const json& r = records_[i];
      TraceRecordEntry e;
      e.line = i + 1;
      e.kind = r.is_object() && r.contains("kind") && r["kind"].is_string() ? trace_record_kind(r["kind"].get_ref<const std::string&>())
                                                                            : TraceRecordKind::other;
      if (e.kind != TraceRecordKind::summary && e.kind != TraceRecordKind::header && r.is_object() && r.contains("step") &&
          r["step"].is_number_integer())
        e.step = get_i32(r, "step", origin_ + ":" + std::to_string(e.line), 0);
      index_.push_back(e);
    }
    index_records();
  });
}

TraceReplay TraceReplay::open(const std::string& path, std::string* warning) {
  // A pipe (`inspect <(zcat t.jsonl.gz)`) cannot be read twice: it is read whole.
  std::error_code ec;
  if (std::filesystem::exists(path, ec) && !std::filesystem::is_regular_file(path, ec)) return TraceReplay(trace_read(path, warning), path);
  TraceReplay t;
  t.origin_ = path;
  t.file_ = TraceFileIndex::open(path, warning);  // its index is read in place, never copied
  reader_boundary(path, [&] { t.index_records(); });
  return t;
}

const std::vector<json>& TraceReplay::records() const {
  TS_CHECK(!file_, origin_ << ": a streamed trace holds no records in memory (read it with trace_read)");
  return records_;
}

const json& TraceReplay::record(size_t i, json& scratch) const { return records_view().at(i, scratch); }

std::vector<json> TraceReplay::records_of_step(int32_t step) const {
  std::vector<json> out;
  if (step < 0 || step >= num_steps_) return out;
  const TraceRecordIndex& idx = index();
  json scratch;
  const size_t end = step_end(step);
  for (size_t r = step == 0 ? 1 : step_end(step - 1); r < end; ++r)
    if (idx.step(r) == step) out.push_back(record(r, scratch));
  return out;
}

std::string TraceReplay::where(size_t i) const { return origin_ + ":" + std::to_string(index().line(i)); }

void TraceReplay::index_records() {
  header_record_ = HeaderRecord::from_json(header(), where(0));
  const TraceRecordIndex& idx = index();
  int32_t last = -1;
  for (size_t i = 1; i < idx.size(); ++i) {
    const TraceRecordEntry e = idx[i];
    if (e.kind == TraceRecordKind::summary) {
      summary_record_ = i;
      // A streamed trace parses its summary only when checked (parse_unreplayed_records):
      // reading one step needs no summary.
      if (!file_) summary_last_step_check(records_[i], num_steps_ - 1, where(i));
      continue;
    }
    TS_CHECK(e.step >= 0 || (e.kind != TraceRecordKind::step && e.kind != TraceRecordKind::keyframe),
             where(i) << ": field step must be an integer");
    if (e.step < 0) continue;
    // at() stops at the first record of a later step and advance() goes on
    // from there: every step's records must be one contiguous, ascending run
    // (docs/trace-format.md), or a step would be read without some of them.
    TS_CHECK(e.step >= last, where(i) << ": a record of step " << e.step << " after records of step " << last
                                     << ": records must be in ascending step order (docs/trace-format.md)");
    last = e.step;
    if (e.kind == TraceRecordKind::step) {
      step_number_check(num_steps_, e.step, idx, i, where(i));
      // One past the last step record: after step_number_check passes a gap
      // (a record comes later), the ascending-order check refuses that record.
      num_steps_ = e.step + 1;
    } else if (e.kind == TraceRecordKind::keyframe) {
      // The recorder writes a keyframe right after its step's record: one
      // that follows another step's record stands for a missing record.
      const int32_t before = num_steps_ - 1;
      TS_CHECK(before == e.step, where(i) << ": keyframe of step " << e.step << " follows the step record of step " << before << ": "
                                          << (e.step > before && !has_step_record(idx, i + 1, e.step)
                                                  ? "the step record of step " + std::to_string(e.step) + " is missing"
                                                  : std::string("a keyframe comes right after its own step's record")));
      if (keyframe_steps_.empty() || keyframe_steps_.back() != e.step) keyframe_steps_.push_back(e.step);
    }
  }
}

std::set<int32_t> TraceReplay::gc_after_forward_steps() const {
  std::set<int32_t> out;
  const TraceRecordIndex& idx = index();
  int64_t last_step_record = -1;
  for (size_t i = 0; i < idx.size(); ++i) {
    const TraceRecordKind k = idx.kind(i);
    if (k == TraceRecordKind::step) last_step_record = idx.step(i);
    else if (k == TraceRecordKind::gc && idx.step(i) == last_step_record) out.insert(idx.step(i));
  }
  return out;
}

bool TraceReplay::gc_after_forward(int32_t step) const {
  if (step < 0 || step >= num_steps_) return false;
  const TraceRecordIndex& idx = index();
  // The step's records are one run (index_records): a gc after its step record.
  bool after_step_record = false;
  const size_t end = step_end(step);
  for (size_t i = step == 0 ? 1 : step_end(step - 1); i < end; ++i) {
    const TraceRecordKind k = idx.kind(i);
    if (k == TraceRecordKind::step && idx.step(i) == step) after_step_record = true;
    else if (k == TraceRecordKind::gc && after_step_record && idx.step(i) == step) return true;
  }
  return false;
}

uint64_t TraceReplay::replay_bytes(int32_t step) const {
  if (!file_ || step < 0 || step >= num_steps_) return 0;
  const size_t start = keyframe_before(step) + 1, end = step_end(step);
  if (end <= start) return 0;
  return file_->index().offset(end - 1) + file_->length(end - 1) - file_->index().offset(start);
}

size_t TraceReplay::keyframe_before(int32_t step) const {
  const auto it = std::lower_bound(keyframe_steps_.begin(), keyframe_steps_.end(), step);
  if (it == keyframe_steps_.begin()) return 0;
  const int32_t k = *std::prev(it);
  // The last keyframe record of step k: at the end of step k's records, or
  // before a gc of step k that follows it.
  const TraceRecordIndex& idx = index();
  for (size_t i = step_end(k); i-- > 1;)
    if (idx.kind(i) == TraceRecordKind::keyframe && idx.step(i) == k) return i;
  TS_FAIL(origin_ << ": the keyframe of step " << k << " is not where the index put it");
}

void TraceReplay::parse_unreplayed_records() const {
  if (!file_) return;
  reader_boundary(origin_, [&] {
    json scratch;
    int32_t last_step_record = -1;
    const TraceRecordIndex& idx = index();
    for (size_t i = 1; i < idx.size(); ++i) {
      const TraceRecordEntry e = idx[i];
      if (e.kind == TraceRecordKind::step) last_step_record = e.step;
      const bool replayed = (e.kind == TraceRecordKind::step || e.kind == TraceRecordKind::gc) && e.step <= last_step();
      if (replayed) continue;
      file_->read(i, scratch);
      // What the in-memory constructor checks of a summary (index_records).
      if (e.kind == TraceRecordKind::summary) summary_last_step_check(scratch, last_step_record, where(i));
    }
  });
}

std::optional<SummaryRecord> TraceReplay::summary_record() const {
  const json* s = summary();
  if (!s) return std::nullopt;
  return reader_boundary(origin_, [&] { return SummaryRecord::from_json(*s, where(summary_record_)); });
}

const json* TraceReplay::summary() const {
  if (summary_record_ == SIZE_MAX) return nullptr;
  if (!file_) return &records_[summary_record_];
  if (!summary_) {
    json rec;
    file_->read(summary_record_, rec);
    summary_ = std::move(rec);
  }
  return &*summary_;
}

std::string TraceReplay::token_text(int32_t token) const {
  const std::vector<std::string>& vocab = header_record_.vocab;
  if (token >= 0 && static_cast<size_t>(token) < vocab.size()) return vocab[static_cast<size_t>(token)];
  return std::to_string(token);
}

StepView TraceReplay::at(int32_t step) const {
  StepView v;
  v.step = step;
  size_t start = 1;
  // Start from the last keyframe strictly before `step`, so the step's own
  // records are replayed and its added nodes, phase and forward are known.
  reader_boundary(origin_, [&] {
    load_keyframe_before(v, step, start);
  });
  replay_into(v, start);
  return v;
}

void TraceReplay::load_keyframe_before(StepView& v, int32_t step, size_t& start) const {
  // Only the last keyframe before `step`: each is read when a step needs it,
  // never every earlier one (what made `check` quadratic).
  const size_t idx = keyframe_before(step);
  if (idx == 0) return;
  json scratch;
  const json& k = record(idx, scratch);
  const std::string where = this->where(idx);
  v.nodes = KeyframeRecord::from_json(k, where).nodes;
  start = idx + 1;
}

StepView TraceReplay::advance(const StepView& from, int32_t step) const {
  StepView v;
  advance_into(from, step, v);
  return v;
}

void TraceReplay::advance_into(const StepView& from, int32_t step, StepView& out) const {
  // at(step) starts from the last keyframe before `step`; when that keyframe
  // is not before `from`, only at() gives its result.
  bool replay = from.step >= step || from.step < 0 || from.step >= num_steps_;
  const auto kf = std::lower_bound(keyframe_steps_.begin(), keyframe_steps_.end(), from.step);
  replay |= kf != keyframe_steps_.end() && *kf < step;
  if (replay) {
    out = at(step);
    return;
  }
  TS_CHECK(&out != &from, origin_ << ": advance_into needs a view other than its start");
  out.step = step;
  out.phase.clear();
  out.nodes.assign(from.nodes.begin(), from.nodes.end());
  out.slot_to_node.clear();
  out.added.clear();
  out.gc_moves.clear();
  out.gc_slots_before = -1;
  out.kv.reset();
  out.chosen = json();
  out.extra = json();
  // out.forward keeps its buffers for replay_into to refill.
  // at(from.step) stopped at the first record of a later step; go on from there.
  replay_into(out, step_end(from.step));
}

void TraceReplay::replay_into(StepView& v, size_t start) const {
  reader_boundary(origin_, [&] { replay_records(v, start); });
}

void TraceReplay::replay_records(StepView& v, size_t start) const {
  const int32_t step = v.step;
  // A forward view's buffers to refill (advance_into's `out`); none for at().
  std::optional<ForwardView> spare;
  spare.swap(v.forward);
  json scratch;
  const TraceRecordIndex& idx = index();
  for (size_t i = start; i < idx.size(); ++i) {
    const TraceRecordEntry entry = idx[i];
    if (entry.kind == TraceRecordKind::summary || entry.kind == TraceRecordKind::header) continue;
    const int32_t s = entry.step;
    if (s > step) break;
    if (entry.kind != TraceRecordKind::gc && entry.kind != TraceRecordKind::step) continue;  // keyframes: at() loaded the one it needs
    const json& r = record(i, scratch);
    const std::string where = this->where(i);
    const bool this_step = s == step;
    if (entry.kind == TraceRecordKind::gc) {
      GcRecord gc = GcRecord::from_json(r, where);
      std::vector<int32_t> remap(static_cast<size_t>(gc.slots_before), kNoSlot);
      for (const auto& [o, n] : gc.moves) remap[static_cast<size_t>(o)] = n;
      if (this_step) v.gc_moves = std::move(gc.moves);
      if (this_step) v.gc_slots_before = static_cast<int32_t>(remap.size());
      for (auto& n : v.nodes)
        if (n.slot >= 0) n.slot = static_cast<size_t>(n.slot) < remap.size() ? remap[static_cast<size_t>(n.slot)] : kNoSlot;
    } else {
      if (r.contains("added")) {
        TS_CHECK(r["added"].is_array(), where << ": field added must be an array");
        for (size_t k = 0; k < r["added"].size(); ++k) {
          const std::string at_node = where + ": added[" + std::to_string(k) + "]";
          TreeNode n = trace_node_parse(r["added"][k], at_node);
          trace_node_put(v.nodes, n, at_node);
          if (this_step) v.added.push_back(n.id);
        }
      }
      if (r.contains("status") && r["status"].is_array())
        for (auto& st : r["status"]) {
          const int32_t id = get_i32(st, "node", where + ": status");
          TS_CHECK(id >= 0 && static_cast<size_t>(id) < v.nodes.size(), where << ": status names unknown node " << id);
          TS_CHECK(st.contains("status") && st["status"].is_string(), where << ": status entry needs a status string");
          try {
            v.nodes[static_cast<size_t>(id)].status = node_status_parse(st["status"].get<std::string>());
          } catch (const Error& e) {
            TS_FAIL(where << ": status: " << e.what());
          }
        }
      if (this_step) {
        TS_CHECK(!r.contains("phase") || r["phase"].is_string(), where << ": field phase must be a string, got " << json_brief(r["phase"]));
        v.phase = r.value("phase", "");
        v.kv.reset();
        if (const auto kv = r.find(kKvField); kv != r.end()) {
          TS_CHECK(kv->is_object(), where << ": field " << kKvField << " must be an object, got " << json_brief(*kv));
          v.kv = KvRecord::from_json(*kv, where + ": " + kKvField);
        }
        v.chosen = r.contains("chosen") ? r["chosen"] : json::array();
        TS_CHECK(v.chosen.is_array(), where << ": field chosen must be an array, got " << json_brief(v.chosen));
        for (size_t k = 0; k < v.chosen.size(); ++k)
          TS_CHECK(v.chosen[k].is_object(), where << ": chosen[" << k << "] must be an object, got " << json_brief(v.chosen[k]));
        v.extra = json::object();
        for (auto& [key, val] : r.items())
          if (key != "kind" && key != "step" && key != "phase" && key != "added" && key != "status" && key != "chosen" &&
              key != kKvField && key != kForwardField)
            v.extra[key] = val;
        if (v.forward) spare.swap(v.forward);
        v.forward.reset();
        if (r.contains(kForwardField) && r[kForwardField].is_object()) {
          if (!spare) spare.emplace();
          forward_view_parse(r[kForwardField], where + ": " + kForwardField, *spare);
          v.forward.swap(spare);
        }
      }
    }
  }
  // A reader must never index through a malformed tree: every id defined,
  // parents earlier in the tree, depth = parent's depth + 1, slots unique.
  for (size_t i = 0; i < v.nodes.size(); ++i) {
    const TreeNode& n = v.nodes[i];
    TS_CHECK(n.id == static_cast<int32_t>(i), origin_ << ": node " << i << " is used by step " << step
                                                      << " but never defined by an added or keyframe record");
    TS_CHECK(n.parent >= kNoNode && n.parent < n.id,
             origin_ << ": node " << i << " field parent = " << n.parent << " must be -1 or an earlier node");
    // In 64 bits: a parent at depth INT32_MAX has no child an int32 can hold.
    if (n.parent != kNoNode)
      TS_CHECK(int64_t{n.depth} == int64_t{v.nodes[static_cast<size_t>(n.parent)].depth} + 1,
               origin_ << ": node " << i << " field depth = " << n.depth << ", its parent's depth + 1 is "
                       << int64_t{v.nodes[static_cast<size_t>(n.parent)].depth} + 1);
    TS_CHECK(n.slot >= kNoSlot && n.slot < (1 << 30), origin_ << ": node " << i << " field slot = " << n.slot << " out of range");
  }
  int32_t num_slots = v.kv ? static_cast<int32_t>(v.kv->slots) : 0;
  for (auto& n : v.nodes) num_slots = std::max(num_slots, n.slot + 1);
  v.slot_to_node.assign(static_cast<size_t>(std::max(0, num_slots)), kNoNode);
  for (auto& n : v.nodes)
    if (n.slot >= 0) {
      TS_CHECK(v.slot_to_node[static_cast<size_t>(n.slot)] == kNoNode,
               origin_ << ": slot " << n.slot << " held by nodes " << v.slot_to_node[static_cast<size_t>(n.slot)] << " and " << n.id
                       << " at step " << step);
      v.slot_to_node[static_cast<size_t>(n.slot)] = n.id;
    }
  for (size_t k = 0; k < v.chosen.size(); ++k)
    if (v.chosen[k].contains("node")) {
      const int32_t id = get_i32(v.chosen[k], "node", origin_ + ": step " + std::to_string(step) + ": chosen[" + std::to_string(k) + "]");
      TS_CHECK(id >= 0 && static_cast<size_t>(id) < v.nodes.size(),
               origin_ << ": step " << step << " chosen[" << k << "].node names node " << id << ", which does not exist");
    }
  if (v.forward)
    for (int32_t q : v.forward->queries)
      TS_CHECK(q >= 0 && static_cast<size_t>(q) < v.nodes.size(),
               origin_ << ": step " << step << " forward.queries names node " << q << ", which does not exist");
}

}  // namespace triescope
