#include "core/trace/trace_index.h"

#include <algorithm>
#include <bit>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <limits>

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

// `w` bits of `v` at bit `pos` of `p` (zeroed there; 9 bytes readable past it).
void put_bits(uint8_t* p, uint64_t pos, unsigned w, uint64_t v) {
  if (w == 0) return;
  const size_t byte = static_cast<size_t>(pos >> 3);
  const unsigned sh = static_cast<unsigned>(pos & 7);
  uint64_t lo;
  std::memcpy(&lo, p + byte, 8);
  lo |= v << sh;
  std::memcpy(p + byte, &lo, 8);
  if (sh + w > 64) p[byte + 8] |= static_cast<uint8_t>(v >> (64 - sh));
}

constexpr int64_t kNoStepBit = 8;  // in the kind field: the record has no step

}  // namespace

TraceRecordKind TraceRecordIndex::kind(size_t i) const {
  return static_cast<TraceRecordKind>(field(i, kKindBits) & (kNoStepBit - 1));
}

int32_t TraceRecordIndex::step(size_t i) const {
  if (field(i, kKindBits) & kNoStepBit) return -1;
  return static_cast<int32_t>(field(i, kOrderStep));
}

TraceRecordEntry TraceRecordIndex::operator[](size_t i) const {
  TraceRecordEntry e;
  e.offset = offset(i);
  e.line = line(i);
  const int64_t k = field(i, kKindBits);
  e.kind = static_cast<TraceRecordKind>(k & (kNoStepBit - 1));
  e.step = (k & kNoStepBit) ? -1 : static_cast<int32_t>(field(i, kOrderStep));
  return e;
}

void TraceRecordIndex::out_of_range(size_t i) const { TS_FAIL("trace index: record " << i << " of " << size_); }

size_t TraceRecordIndex::upper_bound_step(int32_t step, size_t lo) const {
  // Galloping from lo: the record sought is most often a few records on
  // (the next step's), found in a few looks rather than a whole search.
  size_t hi = size_;
  for (size_t span = 1; lo < size_; span *= 2) {
    const size_t probe = std::min(size_ - 1, lo + span - 1);
    if (field(probe, kOrderStep) > step) {
      hi = probe;
      break;
    }
    lo = probe + 1;
  }
  while (lo < hi) {
    const size_t mid = lo + (hi - lo) / 2;
    if (field(mid, kOrderStep) > step) hi = mid;
    else lo = mid + 1;
  }
  return lo;
}

size_t TraceRecordIndex::memory_bytes() const {
  size_t bytes = chunks_.capacity() * sizeof(Chunk);
  for (const Chunk& c : chunks_) {
    uint64_t bits = 0;
    for (const Column& col : c.col) bits = std::max(bits, col.bit + kChunk * col.width);
    bytes += static_cast<size_t>(bits / 8) + 9;
  }
  for (const auto& p : pending_) bytes += p.capacity() * sizeof(int64_t);
  return bytes;
}

void TraceRecordIndex::push_back(const TraceRecordEntry& e) {
  const bool has_step = e.step >= 0;
  if (has_step) last_order_step_ = e.step;
  const int64_t values[kFields] = {static_cast<int64_t>(e.offset), static_cast<int64_t>(e.line), last_order_step_,
                                   static_cast<int64_t>(e.kind) | (has_step ? 0 : kNoStepBit)};
  for (size_t f = 0; f < kFields; ++f) {
    if (pending_[f].capacity() < kChunk) pending_[f].reserve(kChunk);
    pending_[f].push_back(values[f]);
  }
  ++size_;
  if (pending_[0].size() == kChunk) seal();
}

void TraceRecordIndex::seal() {
  Chunk c;
  const size_t n = pending_[0].size();
  uint64_t bits = 0;
  for (size_t f = 0; f < kFields; ++f) {
    const std::vector<int64_t>& v = pending_[f];
    Column& col = c.col[f];
    // Ascending: the first value and the least step between two; else the least value.
    const bool ascending = std::is_sorted(v.begin(), v.end());
    col.base = ascending ? v.front() : *std::min_element(v.begin(), v.end());
    col.stride = std::numeric_limits<int64_t>::max();
    for (size_t j = 1; ascending && j < n; ++j) col.stride = std::min(col.stride, v[j] - v[j - 1]);
    if (!ascending || n == 1) col.stride = 0;
    uint64_t top = 0;
    for (size_t j = 0; j < n; ++j) top = std::max(top, residual(col, v[j], j));
    col.width = static_cast<uint8_t>(std::bit_width(top));
    col.bit = bits;
    bits += static_cast<uint64_t>(n) * col.width;
  }
  c.bits.reset(new uint8_t[static_cast<size_t>(bits / 8) + 9]());
  for (size_t f = 0; f < kFields; ++f)
    for (size_t j = 0; j < n; ++j) put_bits(c.bits.get(), c.col[f].bit + j * c.col[f].width, c.col[f].width, residual(c.col[f], pending_[f][j], j));
  chunks_.push_back(std::move(c));
  for (auto& p : pending_) p.clear();
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
      e.line = lineno;
      offset += static_cast<uint64_t>(got);
      if (line.empty()) continue;  // a blank line: one byte, counted by the next record's line
      const bool first = idx->index_.empty();
      if (first || !skim_record(line, e)) {
        json rec;
        try {
          rec = json_parse_text(line, path, lineno);
        } catch (const Error&) {
          if (terminated || warning == nullptr || first) throw;
          *warning = path + ":" + std::to_string(lineno) + ": the file ends inside a record (a writer that stopped mid-line?); read the " +
                     std::to_string(idx->index_.size()) + " whole records before it";
          break;
        }
        trace_check_record(rec, path, lineno, first);
        e.kind = trace_record_kind(rec["kind"].get_ref<const std::string&>());
        e.step = rec.contains("step") && e.kind != TraceRecordKind::summary ? static_cast<int32_t>(*json_int_in(rec["step"], 0, INT32_MAX)) : -1;
        if (first) idx->header_ = std::move(rec);
      }
      idx->index_.push_back(e);
      idx->end_ = e.offset + line.size();
    }
    TS_CHECK(!idx->index_.empty(), path << ": empty trace (no header record)");
  });
  return idx;
}

TraceFileIndex::~TraceFileIndex() {
  if (f_ != nullptr) std::fclose(f_);
}

uint64_t TraceFileIndex::length(size_t i) const {
  if (i + 1 >= index_.size()) return end_ - index_.offset(i);
  // The next record starts after this one's newline and the blank lines (one byte each) between.
  const uint64_t blank = index_.line(i + 1) - index_.line(i) - 1;
  return index_.offset(i + 1) - index_.offset(i) - 1 - blank;
}

void TraceFileIndex::read(size_t i, json& out) const {
  TS_CHECK(i < index_.size(), path_ << ": record " << i << " of " << index_.size());
  const TraceRecordEntry e = index_[i];
  const uint64_t length = this->length(i);
  std::lock_guard<std::mutex> lock(mu_);
  buf_.resize(length);
  TS_CHECK(::fseeko(f_, static_cast<off_t>(e.offset), SEEK_SET) == 0 && std::fread(buf_.data(), 1, length, f_) == length,
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
