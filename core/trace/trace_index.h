// A trace file read as a stream: one pass locates every record (its byte
// range, line, kind and step) without building it; a record is parsed only
// when a reader asks for it. What lets `check` run in time linear in the
// file and `inspect --step N` read only step N's records, in memory bounded
// by the biggest record and the tree, not by the file (docs/benchmarks.md,
// "Traces at scale").
#pragma once
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

namespace triescope {

enum class TraceRecordKind : uint8_t { header, step, gc, keyframe, summary, other };
TraceRecordKind trace_record_kind(std::string_view kind);  // other for anything unknown

struct TraceRecordEntry {
  uint64_t offset = 0;  // of the record's first byte in the file
  uint64_t length = 0;  // bytes, without the newline
  uint64_t line = 0;    // 1-based line number, for errors
  int32_t step = -1;    // -1 for the header and the summary
  TraceRecordKind kind = TraceRecordKind::other;
};

class TraceFileIndex {
 public:
  // Locates the records of `path`. The header is parsed and checked whole;
  // every other record's kind and step are checked as trace_read checks
  // them (trace_check_record; a line the skim cannot walk is parsed whole).
  // A last line cut off mid-record is an error, or with `warning` dropped
  // with a warning there, as trace_read does.
  static std::shared_ptr<TraceFileIndex> open(const std::string& path, std::string* warning = nullptr);

  const std::string& path() const { return path_; }
  const nlohmann::json& header() const { return header_; }
  const std::vector<TraceRecordEntry>& entries() const { return entries_; }  // [records], the header first
  // Record i parsed from the file into `out` (errors name path:line).
  void read(size_t i, nlohmann::json& out) const;

 private:
  std::string path_;
  nlohmann::json header_;
  std::vector<TraceRecordEntry> entries_;
  mutable std::mutex mu_;  // one reader position
  mutable std::FILE* f_ = nullptr;
  mutable std::string buf_;

 public:
  ~TraceFileIndex();
};

// A trace's records by index, read one at a time: from memory (trace_read's
// vector) or parsed from the file (TraceFileIndex). What lets `diff` and the
// GUI walk two big traces side by side in memory bounded by one record each.
class TraceRecords {
 public:
  explicit TraceRecords(const std::vector<nlohmann::json>& in_memory) : memory_(&in_memory) {}
  explicit TraceRecords(const TraceFileIndex& file) : file_(&file) {}
  size_t size() const { return memory_ ? memory_->size() : file_->entries().size(); }
  // Record i: a reference into memory, or parsed from the file into `scratch`.
  const nlohmann::json& at(size_t i, nlohmann::json& scratch) const;

 private:
  const std::vector<nlohmann::json>* memory_ = nullptr;
  const TraceFileIndex* file_ = nullptr;
};

}  // namespace triescope
