#include "core/trace/trace_index.h"

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "core/common/error.h"
#include "core/config/json_reader.h"
#include "core/trace/trace.h"

namespace triescope {

TraceRecordKind trace_record_kind(std::string_view kind) {
  if (kind == "header") return TraceRecordKind::header;
  if (kind == "step") return TraceRecordKind::step;
  if (kind == "gc") return TraceRecordKind::gc;
  if (kind == "keyframe") return TraceRecordKind::keyframe;
  if (kind == "summary") return TraceRecordKind::summary;
  return TraceRecordKind::other;
}

namespace {

// A record's kind and step from the skim, when they are plainly what
// trace_check_record accepts; false sends the line to the whole parse.
bool skim_record(std::string_view line, TraceRecordEntry& e) {
  std::string_view kind, step, phase;
  bool has_kind = false, has_step = false, has_phase = false;
  const bool walked = json_skim_members(line, [&](std::string_view key, std::string_view value) {
    if (key == "\"kind\"") has_kind = true, kind = value;
    else if (key == "\"step\"") has_step = true, step = value;
    else if (key == "\"phase\"") has_phase = true, phase = value;
  });
  if (!walked || !has_kind || kind.size() < 2 || kind.front() != '"' || kind.back() != '"') return false;
  if (has_phase && (phase.empty() || phase.front() != '"')) return false;
  e.kind = trace_record_kind(kind.substr(1, kind.size() - 2));
  if (e.kind == TraceRecordKind::other || e.kind == TraceRecordKind::header) return false;
  if (e.kind == TraceRecordKind::summary) {
    e.step = -1;
    return true;
  }
  // A plain decimal in [0, INT32_MAX]; anything else the whole parse judges.
  if (!has_step || step.empty() || step.size() > 10 || (step.size() > 1 && step[0] == '0')) return false;
  int64_t s = 0;
  for (char c : step) {
    if (c < '0' || c > '9') return false;
    s = s * 10 + (c - '0');
  }
  if (s > INT32_MAX) return false;
  e.step = static_cast<int32_t>(s);
  return true;
}

}  // namespace

std::shared_ptr<TraceFileIndex> TraceFileIndex::open(const std::string& path, std::string* warning) {
  auto idx = std::make_shared<TraceFileIndex>();
  idx->path_ = path;
  reader_boundary(path, [&] {
    idx->f_ = std::fopen(path.c_str(), "rb");
    TS_CHECK(idx->f_ != nullptr, path << ": cannot open for reading");
    char* buf = nullptr;
    size_t cap = 0;
    struct Free {
      char*& b;
      ~Free() { std::free(b); }
    } free_buf{buf};
    uint64_t offset = 0;
    for (uint64_t lineno = 1;; ++lineno) {
      const ssize_t got = ::getline(&buf, &cap, idx->f_);
      if (got < 0) {
        TS_CHECK(!std::ferror(idx->f_), path << ": read failed");
        break;
      }
      const bool terminated = got > 0 && buf[got - 1] == '\n';
      const std::string_view line(buf, static_cast<size_t>(got) - (terminated ? 1 : 0));
      TraceRecordEntry e;
      e.offset = offset;
      e.length = line.size();
      e.line = lineno;
      offset += static_cast<uint64_t>(got);
      if (line.empty()) continue;
      const bool first = idx->entries_.empty();
      if (first || !skim_record(line, e)) {
        json rec;
        try {
          rec = json_parse_text(line, path, lineno);
        } catch (const Error&) {
          if (terminated || warning == nullptr || first) throw;
          *warning = path + ":" + std::to_string(lineno) + ": the file ends inside a record (a writer that stopped mid-line?); read the " +
                     std::to_string(idx->entries_.size()) + " whole records before it";
          break;
        }
        trace_check_record(rec, path, lineno, first);
        e.kind = trace_record_kind(rec["kind"].get_ref<const std::string&>());
        e.step = rec.contains("step") && e.kind != TraceRecordKind::summary ? static_cast<int32_t>(*json_int_in(rec["step"], 0, INT32_MAX)) : -1;
        if (first) idx->header_ = std::move(rec);
      }
      idx->entries_.push_back(e);
    }
    TS_CHECK(!idx->entries_.empty(), path << ": empty trace (no header record)");
  });
  return idx;
}

TraceFileIndex::~TraceFileIndex() {
  if (f_ != nullptr) std::fclose(f_);
}

void TraceFileIndex::read(size_t i, json& out) const {
  const TraceRecordEntry& e = entries_.at(i);
  std::lock_guard<std::mutex> lock(mu_);
  buf_.resize(e.length);
  TS_CHECK(::fseeko(f_, static_cast<off_t>(e.offset), SEEK_SET) == 0 && std::fread(buf_.data(), 1, e.length, f_) == e.length,
           path_ << ":" << e.line << ": read failed (the file changed since it was opened?)");
  out = json_parse_text(buf_, path_, e.line);
  trace_check_record(out, path_, e.line, i == 0);
  // The skim and the parse must agree on what the record is (duplicate or escaped keys).
  TS_CHECK(trace_record_kind(out["kind"].get_ref<const std::string&>()) == e.kind &&
               (e.kind == TraceRecordKind::summary || e.kind == TraceRecordKind::header || json_int_in(out["step"], e.step, e.step)),
           path_ << ":" << e.line << ": fields kind and step are ambiguous (a key given twice?)");
}

const json& TraceRecords::at(size_t i, json& scratch) const {
  if (memory_) return memory_->at(i);
  file_->read(i, scratch);
  return scratch;
}

}  // namespace triescope
