#include "core/trace/node_record.h"

#include <climits>

#include "core/common/error.h"
#include "core/config/json_reader.h"
#include "core/trace/trace.h"

namespace triescope {

namespace {

// j[key] as an integer in [lo, hi]; errors name the record and the field.
int32_t node_int(const nlohmann::json& j, const char* key, const std::string& where, int32_t lo = INT32_MIN, int32_t hi = INT32_MAX) {
  TS_CHECK(j.is_object() && j.contains(key) && j[key].is_number_integer(), where << ": field " << key << " must be an integer");
  const auto x = json_int_in(j[key], lo, hi);
  TS_CHECK(x, where << ": field " << key << " must be in [" << lo << ", " << hi << "], got " << json_brief(j[key]));
  return static_cast<int32_t>(*x);
}

}  // namespace

nlohmann::json trace_node(const TreeNode& n) {
  return {{"id", n.id},     {"parent", n.parent},
          {"token", n.token}, {"depth", n.depth},
          {"slot", n.slot},   {"logprob", trace_logprob(n.logprob)},
          {"status", std::string(node_status_name(n.status))}};
}

TreeNode trace_node_parse(const nlohmann::json& j, const std::string& where) {
  TS_CHECK(j.is_object(), where << " must be an object");
  TreeNode n;
  n.id = node_int(j, "id", where, 0);
  n.parent = node_int(j, "parent", where, kNoNode);
  n.token = node_int(j, "token", where);
  n.depth = node_int(j, "depth", where, 0);
  n.slot = node_int(j, "slot", where, kNoSlot, kTraceMaxSlots - 1);
  const auto lp = j.contains("logprob") ? trace_logprob_parse(j["logprob"]) : std::nullopt;
  TS_CHECK(lp, where << ": field logprob must be a number or \"-inf\"");
  n.logprob = *lp;
  TS_CHECK(j.contains("status") && j["status"].is_string(), where << ": field status must be a string");
  try {
    n.status = node_status_parse(j["status"].get<std::string>());
  } catch (const Error& e) {
    TS_FAIL(where << ": " << e.what());
  }
  return n;
}

void trace_node_put(std::vector<TreeNode>& nodes, const TreeNode& n, const std::string& where) {
  TS_CHECK(static_cast<size_t>(n.id) >= nodes.size(),
           where << ": field id = " << n.id << " defines node " << n.id
                 << " a second time: a node is defined once and never redefined, the next new id is " << nodes.size());
  TS_CHECK(static_cast<size_t>(n.id) == nodes.size(),
           where << ": field id = " << n.id << " skips ids: node ids are dense, the next new id is " << nodes.size());
  nodes.push_back(n);
}

}  // namespace triescope
