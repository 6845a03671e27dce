#include "core/trace/trace.h"

#include <climits>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <set>
#include <string_view>

#include "core/common/error.h"
#include "core/common/file_io.h"
#include "core/config/json_reader.h"
#include "core/trace/gc_record.h"
#include "core/trace/header_record.h"
#include "core/trace/keyframe_record.h"

namespace triescope {

void TraceFileWriter::record(json rec) { out_.write(rec.dump() + "\n"); }

bool trace_record_kind_known(std::string_view kind) {
  return kind == "header" || kind == "step" || kind == "gc" || kind == "keyframe" || kind == "summary";
}

void trace_check_record(const json& rec, const std::string& origin, size_t lineno, bool first) {
  TS_CHECK(rec.is_object(), origin << ":" << lineno << ": record must be a JSON object");
  TS_CHECK(rec.contains("kind") && rec["kind"].is_string(), origin << ":" << lineno << ": missing field kind");
  const std::string& kind = rec["kind"].get_ref<const std::string&>();
  TS_CHECK(trace_record_kind_known(kind), origin << ":" << lineno << ": unknown record kind \"" << kind << "\"");
  if (first) {
    TS_CHECK(kind == "header", origin << ":1: first record must be the header, got \"" << kind << "\"");
    (void)HeaderRecord::from_json(rec, origin + ":1");  // the header's fields with their types
    return;
  }
  TS_CHECK(kind != "header", origin << ":" << lineno << ": a second header record");
  if (kind != "summary")
    TS_CHECK(rec.contains("step") && json_int_in(rec["step"], 0, INT32_MAX),
             origin << ":" << lineno << ": field step must be an integer in [0, " << INT32_MAX << "]");
  // Every reader branches on a record's phase (analysis, the GUI's panes).
  TS_CHECK(!rec.contains("phase") || rec["phase"].is_string(),
           origin << ":" << lineno << ": field phase must be a string, got " << json_brief(rec["phase"]));
}

namespace {

// Reads JSON Lines from `next_line` (a line without its '\n', and whether
// the '\n' was there). A last line cut off mid-record (a writer that crashed)
// is dropped with `*warning` when the caller asked for warnings.
template <class NextLine>
std::vector<json> trace_parse_lines(NextLine next_line, const std::string& origin, std::string* warning) {
  std::vector<json> out;
  std::string_view line;
  bool terminated = true;
  for (size_t lineno = 1; next_line(line, terminated); ++lineno) {
    if (line.empty()) continue;
    json rec;
    try {
      rec = json_parse_text(line, origin, lineno);
    } catch (const Error& e) {
      if (terminated || warning == nullptr || out.empty()) throw;
      *warning = origin + ":" + std::to_string(lineno) + ": the file ends inside a record (a writer that stopped mid-line?); read the " +
                 std::to_string(out.size()) + " whole records before it";
      break;
    }
    trace_check_record(rec, origin, lineno, out.empty());
    out.push_back(std::move(rec));
  }
  TS_CHECK(!out.empty(), origin << ": empty trace (no header record)");
  return out;
}

}  // namespace

std::vector<json> trace_parse(const std::string& text, const std::string& origin, std::string* warning) {
  return reader_boundary(origin, [&] {
    size_t pos = 0;
    auto next_line = [&](std::string_view& line, bool& terminated) {
      if (pos >= text.size()) return false;
      const size_t nl = text.find('\n', pos);
      terminated = nl != std::string::npos;
      const size_t end = terminated ? nl : text.size();
      line = std::string_view(text).substr(pos, end - pos);
      pos = end + 1;
      return true;
    };
    return trace_parse_lines(next_line, origin, warning);
  });
}

std::vector<json> trace_read(const std::string& path, std::string* warning) {
  return reader_boundary(path, [&] {
    // Line by line: the file's text is never held whole, only its records.
    std::ifstream in(path, std::ios::binary);
    TS_CHECK(in, path << ": cannot open for reading");
    std::string buf;
    auto next_line = [&](std::string_view& line, bool& terminated) {
      if (!std::getline(in, buf)) {
        TS_CHECK(!in.bad(), path << ": read failed");
        return false;
      }
      terminated = !in.eof();
      line = buf;
      return true;
    };
    return trace_parse_lines(next_line, path, warning);
  });
}

json trace_header(const std::string& algorithm, const std::string& backend, const json& config, const json& model,
                  const std::vector<std::string>& vocab, const std::string& verify_kind) {
  return HeaderRecord{.algorithm = algorithm, .backend = backend, .config = config, .model = model, .verify_kind = verify_kind, .vocab = vocab}
      .to_json();
}

json trace_logprob(double logprob) {
  // JSON has no infinities (nlohmann would write null): -inf, a token of
  // probability 0, is the string "-inf" (docs/trace-format.md).
  if (std::isinf(logprob) && logprob < 0) return "-inf";
  return logprob;
}

std::optional<double> trace_logprob_parse(const json& j) {
  if (j.is_number()) return j.get<double>();
  if (j.is_string() && j.get_ref<const std::string&>() == "-inf") return -HUGE_VAL;
  return std::nullopt;
}

json trace_mask(const BitMask& m) {
  json rows = json::array();
  for (int32_t r = 0; r < m.rows; ++r) rows.push_back(m.row_hex(r));
  return {{"cols", m.cols}, {"rows", std::move(rows)}};
}

BitMask trace_mask_parse(const json& j, const std::string& where) {
  TS_CHECK(j.is_object() && j.contains("cols") && j["cols"].is_number_integer() && j.contains("rows") &&
               j["rows"].is_array(),
           where << " must be {\"cols\": int, \"rows\": [hex...]}");
  const auto cols = json_int_in(j["cols"], 0, kTraceMaxSlots);
  TS_CHECK(cols, where << ".cols must be in [0, " << kTraceMaxSlots << "], got " << json_brief(j["cols"]));
  const json& rows = j["rows"];
  TS_CHECK(rows.size() <= static_cast<size_t>(kTraceMaxSlots), where << ".rows holds " << rows.size() << " rows, more than " << kTraceMaxSlots);
  // Every row's length before the mask is allocated: the rows, not cols, hold the bytes.
  const size_t hex_chars = static_cast<size_t>((*cols + 7) / 8) * 2;
  for (size_t r = 0; r < rows.size(); ++r)
    TS_CHECK(rows[r].is_string() && rows[r].get_ref<const std::string&>().size() == hex_chars,
             where << ".rows[" << r << "] is not a hex row of " << *cols << " bits");
  BitMask m(static_cast<int32_t>(rows.size()), static_cast<int32_t>(*cols));
  for (int32_t r = 0; r < m.rows; ++r)
    TS_CHECK(m.set_row_hex(r, rows[static_cast<size_t>(r)].get<std::string>()),
             where << ".rows[" << r << "] is not a hex row of " << *cols << " bits");
  return m;
}

json trace_keyframe(int32_t step, const TokenTree& tree, int32_t num_slots) {
  return KeyframeRecord::from_tree(step, tree, num_slots).to_json();
}

json trace_gc_record(int32_t step, const CompactionPlan& plan) { return GcRecord::from_plan(step, plan).to_json(); }

}  // namespace triescope
