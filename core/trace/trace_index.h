// A trace file read as a stream: one pass locates every record (its byte
// range, line, kind and step) without building it; a record is parsed only
// when a reader asks for it. What lets `check` run in time linear in the
// file and `inspect --step N` read only step N's records, in memory bounded
// by the biggest record and the tree, not by the file (docs/benchmarks.md,
// "Traces at scale").
#pragma once
#include <cstdint>
#include <cstring>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

namespace triescope {

enum class TraceRecordKind : uint8_t { header, step, gc, keyframe, summary, other };
TraceRecordKind trace_record_kind(std::string_view kind);  // other for anything unknown

// What an index knows of one record, as a value (TraceRecordIndex::operator[]).
struct TraceRecordEntry {
  uint64_t offset = 0;  // of the record's first byte in the file (0 for records in memory)
  uint64_t line = 0;    // 1-based line number, for errors
  int32_t step = -1;    // -1 for the header, the summary and a record without a step
  TraceRecordKind kind = TraceRecordKind::other;
};

// The kind, step, line and file offset of every record of a trace, packed:
// records in chunks of kChunk, each field of a chunk stored as the chunk's
// first value plus a fixed stride plus a residual of as few bits as the
// chunk needs. A trace's fields grow steadily (offsets by about one record's
// size, lines and steps by about one a record, kinds repeat), so a record
// costs a few bits to a few bytes, not the 32 bytes of a struct, and the
// chunks are allocated one at a time: no doubling vector and no copy of it.
// Built with push_back, then read at random.
class TraceRecordIndex {
 public:
  static constexpr size_t kChunk = 1024;

  size_t size() const { return size_; }
  bool empty() const { return size_ == 0; }
  TraceRecordEntry operator[](size_t i) const;
  TraceRecordKind kind(size_t i) const;
  int32_t step(size_t i) const;  // -1 for a record without one
  uint64_t line(size_t i) const { return static_cast<uint64_t>(field(i, kLine)); }
  uint64_t offset(size_t i) const { return static_cast<uint64_t>(field(i, kOffset)); }
  // The first record in [lo, size()) whose step is above `step`, a record
  // without a step counting as the step of the record before it. Valid when
  // the steps of the records ascend (TraceReplay checks that they do):
  // a binary search, no per-step table.
  size_t upper_bound_step(int32_t step, size_t lo) const;
  // Bytes held (chunks and the chunk being filled), for the tests' bounds.
  size_t memory_bytes() const;

  // Offsets and lines must ascend (a record's, then the next one's).
  void push_back(const TraceRecordEntry& e);

 private:
  enum Field : size_t { kOffset, kLine, kOrderStep, kKindBits, kFields };
  struct Column {
    int64_t base = 0;    // the chunk's first value, or its least when the values do not ascend
    int64_t stride = 0;  // value(j) = base + j * stride + residual(j)
    uint64_t bit = 0;    // where the residuals start in the chunk's bits
    uint8_t width = 0;   // bits per residual, 0..64
  };
  struct Chunk {
    Column col[kFields];
    std::unique_ptr<uint8_t[]> bits;
  };
  // Inline: a replay reads a few fields of every record it passes.
  int64_t field(size_t i, Field f) const {
    if (i >= size_) out_of_range(i);
    const size_t c = i / kChunk, j = i % kChunk;
    if (c == chunks_.size()) return pending_[f][j];
    const Column& col = chunks_[c].col[f];
    const uint64_t r = get_bits(chunks_[c].bits.get(), col.bit + j * col.width, col.width);
    return static_cast<int64_t>(static_cast<uint64_t>(col.base) + static_cast<uint64_t>(j) * static_cast<uint64_t>(col.stride) + r);
  }
  [[noreturn]] void out_of_range(size_t i) const;
  // `w` bits at bit `pos` of `p` (9 bytes readable past its byte).
  static uint64_t get_bits(const uint8_t* p, uint64_t pos, unsigned w) {
    if (w == 0) return 0;
    const size_t byte = static_cast<size_t>(pos >> 3);
    const unsigned sh = static_cast<unsigned>(pos & 7);
    uint64_t x;
    std::memcpy(&x, p + byte, 8);
    x >>= sh;
    if (sh + w > 64) x |= static_cast<uint64_t>(p[byte + 8]) << (64 - sh);
    return w == 64 ? x : x & ((uint64_t{1} << w) - 1);
  }
  static uint64_t residual(const Column& c, int64_t value, size_t j) {
    return static_cast<uint64_t>(value) - static_cast<uint64_t>(c.base) - static_cast<uint64_t>(j) * static_cast<uint64_t>(c.stride);
  }
  void seal();  // packs pending_ into a chunk
  std::vector<Chunk> chunks_;
  std::vector<int64_t> pending_[kFields];  // the records of the chunk being filled
  size_t size_ = 0;
  int64_t last_order_step_ = -1;
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
  // [records], the header first: kind, step, line and offset of each.
  const TraceRecordIndex& index() const { return index_; }
  size_t size() const { return index_.size(); }
  // Record i's bytes, without its newline: up to the next record (less the
  // newline and the blank lines between, which the lines count), or to the
  // last record's end.
  uint64_t length(size_t i) const;
  // Record i parsed from the file into `out` (errors name path:line).
  void read(size_t i, nlohmann::json& out) const;

 private:
  std::string path_;
  nlohmann::json header_;
  TraceRecordIndex index_;
  uint64_t end_ = 0;  // the byte after the last record's text
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
  size_t size() const { return memory_ ? memory_->size() : file_->size(); }
  // Record i: a reference into memory, or parsed from the file into `scratch`.
  const nlohmann::json& at(size_t i, nlohmann::json& scratch) const;

 private:
  const std::vector<nlohmann::json>* memory_ = nullptr;
  const TraceFileIndex* file_ = nullptr;
};

}  // namespace triescope
