// Traces: the contract between core, cuda, gui and CI (docs/trace-format.md).
// JSON Lines; the first record is the header with the format name and an
// integer version; readers accept [kTraceMinVersion, kTraceVersion].
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/common/output_file.h"
#include "core/kv/kv_cache.h"
#include "core/mask/bit_mask.h"
#include "core/trace/node_record.h"
#include "core/tree/token_tree.h"

namespace triescope {

using json = nlohmann::json;

inline constexpr const char* kTraceFormat = "triescope.trace";
inline constexpr int kTraceVersion = 2;
inline constexpr int kTraceMinVersion = 1;
// The most KV slots (mask columns, gc slots_before, kv.slots, a node's slot)
// a trace may declare: readers check declared sizes against it before they
// allocate or print anything for them (a 4096-slot decode is a big one).
inline constexpr int32_t kTraceMaxSlots = 1 << 24;

// verify.kind of a v2 step record: what its verify object holds (v1 traces
// have no kind; readers tell the shapes apart by the header's algorithm).
inline constexpr const char* kVerifySpeculativeChain = "speculative_chain";  // speculative decoding
inline constexpr const char* kVerifyDsbdLayers = "dsbd_layers";              // DSBD, Algorithm 1
inline constexpr const char* kVerifyLookahead = "lookahead_candidates";      // lookahead, trie-merged or independent

// Where decoders send records. Implementations: a file, memory, the GUI.
class TraceSink {
 public:
  virtual ~TraceSink() = default;
  virtual void record(json rec) = 0;
};

class MemoryTraceSink final : public TraceSink {
 public:
  void record(json rec) override { records.push_back(std::move(rec)); }
  std::vector<json> records;
};

// Writes through an OutputFile (core/common/output_file.h): a regular path
// gets a temporary renamed onto it on commit(), so a failed run never leaves
// a half-written trace; a device, FIFO or "-" is streamed. Destroyed
// uncommitted: removes the temporary.
class TraceFileWriter final : public TraceSink {
 public:
  explicit TraceFileWriter(std::string path) : out_(std::move(path)) {}
  void record(json rec) override;
  void commit() { out_.commit(); }
  const OutputFile& output() const { return out_; }

 private:
  OutputFile out_;
};

// Reads a whole trace; checks format, version, record kinds and the header's
// field types. Errors name the file, the line and the field. The file is read
// line by line (never whole). A last line cut off mid-record (a writer that
// crashed) is an error, or, when `warning` is given, dropped with a warning
// there: the trace opens up to its last whole record.
std::vector<json> trace_read(const std::string& path, std::string* warning = nullptr);
std::vector<json> trace_parse(const std::string& text, const std::string& origin, std::string* warning = nullptr);

// One record's checks as trace_read makes them: an object with a known
// `kind`; the first (`first`) the header with its fields' types, no other a
// header; `step` an integer in [0, INT32_MAX] but in the summary; `phase` a
// string. Errors name origin:lineno and the field.
void trace_check_record(const json& rec, const std::string& origin, size_t lineno, bool first);
bool trace_record_kind_known(std::string_view kind);

// --- record helpers shared by every decoder ---
json trace_header(const std::string& algorithm, const std::string& backend, const json& config, const json& model,
                  const std::vector<std::string>& vocab, const std::string& verify_kind = "");
// A node's logprob as written (-inf as the string "-inf") and read back
// (nullopt for anything but a number or "-inf").
json trace_logprob(double logprob);
std::optional<double> trace_logprob_parse(const json& j);
json trace_mask(const BitMask& m);  // {"cols": N, "rows": ["hex", ...]}
BitMask trace_mask_parse(const json& j, const std::string& where);
json trace_keyframe(int32_t step, const TokenTree& tree, int32_t num_slots);
// The "gc" record of step `step`: the compaction plan as [old, new] moves.
json trace_gc_record(int32_t step, const CompactionPlan& plan);

}  // namespace triescope
