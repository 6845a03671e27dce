#include "gui/trace_document.h"

#include "core/analysis/forward_layout.h"
#include "core/analysis/verify_kind.h"

#include <set>

#include <chrono>
#include <algorithm>
#include <climits>
#include <fstream>
#include <sstream>

#include "core/common/error.h"
#include "core/config/json_reader.h"
#include "core/decode/run_sample.h"

namespace triescope::gui {

int32_t TraceDocument::step_index(int32_t step) const {
  // The steps are 0 .. last (TraceSteps): a step is its own index.
  return step >= 0 && static_cast<size_t>(step) < replay->steps().size() ? step : -1;
}

namespace {

int32_t saturated(int64_t x) { return static_cast<int32_t>(std::clamp<int64_t>(x, INT32_MIN, INT32_MAX)); }

// A column of `n` entries, `fill` until something else is set.
template <class T>
T& column_at(std::vector<T>& col, size_t n, size_t i, T fill) {
  if (col.empty()) col.assign(n, fill);
  return col[i];
}

}  // namespace

StepStat StepStats::operator[](size_t i) const {
  StepStat s;
  s.step = static_cast<int32_t>(i);
  int64_t* figures[4] = {&s.slots, &s.peak, &s.batch_slots, &s.live_beams};
  for (size_t k = 0; k < 4; ++k)
    if (!kv_[k].empty()) *figures[k] = kv_[k].at(i);
  if (!seconds_.empty()) s.seconds = seconds_.at(i);
  s.gc = !gc_.empty() && gc_.at(i);
  s.gc_after_forward = !gc_after_forward_.empty() && gc_after_forward_.at(i);
  return s;
}

void StepStats::set_kv(size_t i, int64_t slots, int64_t peak, int64_t batch_slots, int64_t live_beams) {
  const int64_t figures[4] = {slots, peak, batch_slots, live_beams};
  for (size_t k = 0; k < 4; ++k)
    if (figures[k] != -1 || !kv_[k].empty()) column_at<int32_t>(kv_[k], size_, i, -1) = saturated(figures[k]);
}

void StepStats::set_seconds(size_t i, double seconds) { column_at<float>(seconds_, size_, i, -1.0f) = static_cast<float>(seconds); }

void StepStats::set_gc(size_t i, bool after_forward) {
  if (gc_.empty()) gc_.assign(size_, false);
  gc_[i] = true;
  if (!after_forward) return;
  if (gc_after_forward_.empty()) gc_after_forward_.assign(size_, false);
  gc_after_forward_[i] = true;
}

size_t StepStats::memory_bytes() const {
  size_t bytes = seconds_.capacity() * sizeof(float) + (gc_.capacity() + gc_after_forward_.capacity()) / 8;
  for (const auto& c : kv_) bytes += c.capacity() * sizeof(int32_t);
  return bytes;
}

namespace {

// One step's figures from its step record.
void step_stat_read(const json& r, StepStats& stats, size_t step) {
  if (r.contains(kKvField) && r[kKvField].is_object()) {
    // A malformed kv leaves the step's figures unset here; showing the step
    // (TraceReplay::at) reports it.
    std::optional<KvRecord> kv;
    try {
      kv = KvRecord::from_json(r[kKvField], kKvField);
    } catch (const Error&) {
    }
    if (kv) stats.set_kv(step, kv->slots, kv->peak, kv->batch_slots.value_or(-1), kv->live_beams.value_or(-1));
  }
  if (r.contains("seconds") && r["seconds"].is_number()) stats.set_seconds(step, r["seconds"].get<double>());
}

// The plots' per-step figures and the step records' fields: one pass over
// the step and gc records, each read on its own (a streamed trace is never
// held whole; keyframes are not read at all). The state itself comes from
// TraceReplay::at() when a step is shown.
void document_index(TraceDocument& doc) {
  const TraceReplay& replay = *doc.replay;
  const TraceRecordIndex& index = replay.index();
  const TraceRecords records = replay.records_view();
  doc.stats = StepStats(replay.steps().size());
  json scratch;
  for (size_t i = 0; i < index.size(); ++i) {
    const TraceRecordKind kind = index.kind(i);
    if (kind != TraceRecordKind::step && kind != TraceRecordKind::gc) continue;
    // A gc record alone (no step record for its step) is not a step of the replay.
    const int32_t step = index.step(i);
    if (doc.step_index(step) < 0) continue;
    if (kind == TraceRecordKind::gc) {
      doc.stats.set_gc(static_cast<size_t>(step), replay.gc_after_forward(step));
      continue;
    }
    const json& r = records.at(i, scratch);
    step_stat_read(r, doc.stats, static_cast<size_t>(step));
    for (const auto& [key, value] : r.items()) doc.step_fields.insert(key);
  }
}

TraceDocumentPtr document_from_replay(std::unique_ptr<TraceReplay> replay, const std::string& origin) {
  auto doc = std::make_shared<TraceDocument>();
  doc->origin = origin;
  doc->replay = std::move(replay);
  verify_kind_of_header(doc->replay->header(), origin);  // an unregistered verify kind is refused here, by name
  doc->prompt_len = doc->replay->header_record().prompt_length();
  document_index(*doc);
  return doc;
}

}  // namespace

TraceDocumentPtr trace_document_from_records(std::vector<json> records, const std::string& origin) {
  return reader_boundary(origin, [&] { return document_from_replay(std::make_unique<TraceReplay>(std::move(records), origin), origin); });
}

TraceDocumentPtr trace_document_load(const std::string& path) {
  const auto t0 = std::chrono::steady_clock::now();
  std::string warning;
  auto replay = std::make_unique<TraceReplay>(TraceReplay::open(path, &warning));
  auto doc = reader_boundary(path, [&] { return document_from_replay(std::move(replay), path); });
  const_cast<TraceDocument&>(*doc).warning = warning;
  const_cast<TraceDocument&>(*doc).load_seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return doc;
}

TraceDocumentPtr trace_document_load_preview(const std::string& path, size_t max_bytes) {
  std::ifstream in(path, std::ios::binary);
  TS_CHECK(in, path << ": cannot open for reading");
  in.seekg(0, std::ios::end);
  const auto size = static_cast<size_t>(in.tellg());
  if (size <= max_bytes) return nullptr;
  in.seekg(0);
  std::string text(max_bytes, '\0');
  in.read(text.data(), static_cast<std::streamsize>(max_bytes));
  const size_t cut = text.rfind('\n');
  if (cut == std::string::npos) return nullptr;  // one huge record: no useful prefix
  text.resize(cut + 1);
  auto doc = trace_document_from_records(trace_parse(text, path), path);
  const_cast<TraceDocument&>(*doc).preview = true;
  return doc;
}

void LiveTraceSink::record(json rec) {
  std::lock_guard<std::mutex> lock(m_);
  records_.push_back(std::move(rec));
}

std::vector<json> LiveTraceSink::snapshot_if_grown(size_t have) {
  std::lock_guard<std::mutex> lock(m_);
  if (records_.size() <= have) return {};
  return records_;
}

namespace {
// Sends every record to memory and, when given, to a second sink.
class TeeSink final : public TraceSink {
 public:
  explicit TeeSink(TraceSink* also) : also_(also) {}
  void record(json rec) override {
    if (also_) also_->record(rec);
    records.push_back(std::move(rec));
  }
  std::vector<json> records;

 private:
  TraceSink* also_;
};
}  // namespace

TraceDocumentPtr trace_document_run_sample(const std::string& sample_path, const std::function<void(json&)>& edit,
                                           std::string* report, TraceSink* also) {
  json j = json_load_file(sample_path);
  if (edit) edit(j);
  Sample s = sample_parse(j, sample_path);
  TeeSink sink(also);
  std::ostringstream os;
  run_sample(s, &sink, os);
  if (report) *report = os.str();
  return trace_document_from_records(std::move(sink.records), "live: " + sample_path);
}

}  // namespace triescope::gui
