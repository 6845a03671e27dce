#include "core/trace/trace.h"

#include <cstdio>
#include <set>
#include <sstream>

#include "core/common/error.h"
#include "core/common/file_io.h"

namespace triescope {

TraceFileWriter::TraceFileWriter(std::string path) : path_(std::move(path)) {
  tmp_ = file_temp_path(path_);
  f_ = std::fopen(tmp_.c_str(), "wb");
  TS_CHECK(f_ != nullptr, path_ << ": cannot open for writing (temporary " << tmp_ << ")");
}

TraceFileWriter::~TraceFileWriter() {
  if (f_) std::fclose(f_);
  if (!committed_) std::remove(tmp_.c_str());
}

void TraceFileWriter::record(json rec) {
  const std::string line = rec.dump() + "\n";
  TS_CHECK(std::fwrite(line.data(), 1, line.size(), f_) == line.size(), path_ << ": write failed");
}

void TraceFileWriter::commit() {
  TS_CHECK(std::fflush(f_) == 0 && std::fclose(f_) == 0, path_ << ": write failed on close");
  f_ = nullptr;
  TS_CHECK(std::rename(tmp_.c_str(), path_.c_str()) == 0, path_ << ": cannot rename temporary " << tmp_ << " into place");
  committed_ = true;
}

std::vector<json> trace_parse(const std::string& text, const std::string& origin) {
  static const std::set<std::string> kinds = {"header", "step", "gc", "keyframe", "summary"};
  std::vector<json> out;
  std::istringstream in(text);
  std::string line;
  size_t lineno = 0;
  while (std::getline(in, line)) {
    ++lineno;
    if (line.empty()) continue;
    json rec;
    try {
      rec = json::parse(line);
    } catch (const json::parse_error& e) {
      TS_FAIL(origin << ":" << lineno << ": malformed JSON: " << e.what());
    }
    TS_CHECK(rec.is_object(), origin << ":" << lineno << ": record must be a JSON object");
    TS_CHECK(rec.contains("kind") && rec["kind"].is_string(), origin << ":" << lineno << ": missing field kind");
    const std::string kind = rec["kind"].get<std::string>();
    TS_CHECK(kinds.count(kind), origin << ":" << lineno << ": unknown record kind \"" << kind << "\"");
    if (out.empty()) {
      TS_CHECK(kind == "header", origin << ":1: first record must be the header, got \"" << kind << "\"");
      TS_CHECK(rec.contains("schema") && rec["schema"] == kTraceFormat,
               origin << ":1: field schema must be \"" << kTraceFormat << "\", got "
                      << (rec.contains("schema") ? rec["schema"].dump() : std::string("nothing")));
      TS_CHECK(rec.contains("version") && rec["version"].is_number_integer(),
               origin << ":1: field version must be an integer");
      const int v = rec["version"].get<int>();
      TS_CHECK(v >= kTraceMinVersion && v <= kTraceVersion,
               origin << ":1: field version is " << v << ", this build reads versions " << kTraceMinVersion << " to "
                      << kTraceVersion);
    } else {
      TS_CHECK(kind != "header", origin << ":" << lineno << ": a second header record");
      if (kind != "summary")
        TS_CHECK(rec.contains("step") && rec["step"].is_number_integer(),
                 origin << ":" << lineno << ": field step must be an integer");
    }
    out.push_back(std::move(rec));
  }
  TS_CHECK(!out.empty(), origin << ": empty trace (no header record)");
  return out;
}

std::vector<json> trace_read(const std::string& path) { return trace_parse(file_read_all(path), path); }

json trace_header(const std::string& algorithm, const std::string& backend, const json& config, const json& model,
                  const std::vector<std::string>& vocab, const std::string& verify_kind) {
  json h = {{"kind", "header"}, {"schema", kTraceFormat}, {"version", kTraceVersion}, {"algorithm", algorithm},
            {"backend", backend}, {"config", config}, {"model", model}};
  if (!verify_kind.empty()) h["verify_kind"] = verify_kind;
  if (!vocab.empty()) h["vocab"] = vocab;
  return h;
}

std::string trace_verify_kind(const json& header) {
  const int version = header.contains("version") && header["version"].is_number_integer() ? header["version"].get<int>() : 0;
  if (version >= 2) {
    const auto it = header.find("verify_kind");
    return it != header.end() && it->is_string() ? it->get<std::string>() : std::string();
  }
  // Version 1 wrote no kind: its three verifying decoders are known by name.
  const std::string algo = header.value("algorithm", std::string());
  if (algo == "speculative") return kVerifySpeculativeChain;
  if (algo == "dsbd") return kVerifyDsbdLayers;
  if (algo == "lookahead") return kVerifyLookahead;
  return "";
}

json trace_node(const TreeNode& n) {
  return {{"id", n.id},       {"parent", n.parent},   {"token", n.token}, {"depth", n.depth},
          {"slot", n.slot},   {"logprob", n.logprob}, {"status", std::string(node_status_name(n.status))}};
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
  const int64_t cols = j["cols"].get<int64_t>();
  TS_CHECK(cols >= 0 && cols < (int64_t{1} << 31), where << ".cols out of range: " << cols);
  BitMask m(static_cast<int32_t>(j["rows"].size()), static_cast<int32_t>(cols));
  for (int32_t r = 0; r < m.rows; ++r) {
    const json& row = j["rows"][static_cast<size_t>(r)];
    TS_CHECK(row.is_string() && m.set_row_hex(r, row.get<std::string>()),
             where << ".rows[" << r << "] is not a hex row of " << cols << " bits");
  }
  return m;
}

json trace_keyframe(int32_t step, const TokenTree& tree, int32_t num_slots) {
  json nodes = json::array();
  std::vector<int32_t> slot_to_node(static_cast<size_t>(num_slots), kNoNode);
  for (const TreeNode& n : tree.nodes()) {
    nodes.push_back(trace_node(n));
    if (n.slot >= 0 && n.slot < num_slots) slot_to_node[static_cast<size_t>(n.slot)] = n.id;
  }
  return {{"kind", "keyframe"}, {"step", step}, {"nodes", std::move(nodes)}, {"slot_to_node", std::move(slot_to_node)}};
}

json trace_gc_record(int32_t step, const CompactionPlan& plan) {
  json moves = json::array();
  for (int32_t i = 0; i < plan.new_num_slots(); ++i) moves.push_back({plan.src[static_cast<size_t>(i)], i});
  return {{"kind", "gc"},
          {"step", step},
          {"slots_before", plan.old_num_slots},
          {"slots_after", plan.new_num_slots()},
          {"moves", std::move(moves)}};
}

}  // namespace triescope
