#include "gui/trace_document.h"

#include "core/analysis/forward_layout.h"
#include "core/analysis/verify_kind.h"

#include <set>

#include <chrono>
#include <climits>
#include <fstream>
#include <sstream>

#include "core/common/error.h"
#include "core/config/json_reader.h"
#include "core/decode/run_sample.h"

namespace triescope::gui {

int32_t TraceDocument::step_index(int32_t step) const {
  const auto& s = replay->steps();
  auto it = std::lower_bound(s.begin(), s.end(), step);
  return it != s.end() && *it == step ? static_cast<int32_t>(it - s.begin()) : -1;
}

namespace {
int64_t int_or(const json& j, const char* key) {
  return j.contains(key) && j[key].is_number_integer() ? j[key].get<int64_t>() : -1;
}
}  // namespace

namespace {

// One step's figures from its step record.
void step_stat_read(const json& r, StepStat& st) {
  st.phase = r.value("phase", "");
  if (r.contains("kv") && r["kv"].is_object()) {
    st.slots = int_or(r["kv"], "slots");
    st.peak = int_or(r["kv"], "peak");
    st.batch_slots = int_or(r["kv"], "batch_slots");
    st.live_beams = int_or(r["kv"], "live_beams");
  }
  if (r.contains("seconds") && r["seconds"].is_number()) st.seconds = r["seconds"].get<double>();
}

// The plots' per-step figures and the step records' fields: one pass over
// the step and gc records, each read on its own (a streamed trace is never
// held whole; keyframes are not read at all). The state itself comes from
// TraceReplay::at() when a step is shown.
void document_index(TraceDocument& doc) {
  const TraceReplay& replay = *doc.replay;
  const std::set<int32_t> gc_after = replay.gc_after_forward_steps();
  const TraceRecords records = replay.records_view();
  json scratch;
  for (size_t i = 0; i < replay.entries().size(); ++i) {
    const TraceRecordEntry& e = replay.entries()[i];
    if (e.kind != TraceRecordKind::step && e.kind != TraceRecordKind::gc) continue;
    // A gc record alone (no step record for its step) is not a step of the replay.
    if (doc.step_index(e.step) < 0) continue;
    if (doc.stats.empty() || doc.stats.back().step != e.step) doc.stats.push_back(StepStat{e.step, {}, -1, -1, -1, -1, -1, false, false});
    StepStat& st = doc.stats.back();
    if (e.kind == TraceRecordKind::gc) {
      st.gc = true;
      st.gc_after_forward = gc_after.count(e.step) > 0;
      continue;
    }
    const json& r = records.at(i, scratch);
    step_stat_read(r, st);
    for (const auto& [key, value] : r.items()) doc.step_fields.insert(key);
  }
}

TraceDocumentPtr document_from_replay(std::unique_ptr<TraceReplay> replay, const std::string& origin) {
  auto doc = std::make_shared<TraceDocument>();
  doc->origin = origin;
  doc->replay = std::move(replay);
  const json& h = doc->replay->header();
  verify_kind_of_header(h, origin);  // an unregistered verify kind is refused here, by name
  if (h.contains("config") && h["config"].is_object() && h["config"].contains("prompt") && h["config"]["prompt"].is_array())
    doc->prompt_len = static_cast<int32_t>(h["config"]["prompt"].size());
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
