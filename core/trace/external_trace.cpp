#include "core/trace/external_trace.h"

#include <algorithm>
#include <cmath>

#include "core/common/error.h"

namespace triescope {

namespace {

// The step's gc (s.gc_moves) applied to the copies tree and s2n: returns the
// compaction plan; a node whose slot is dropped (never a live one) holds
// none after it, a moved one its new slot, and s2n is renumbered.
CompactionPlan apply_gc(const ExternalStep& s, int32_t step_no, TokenTree& tree, std::vector<int32_t>& s2n) {
  TS_CHECK(step_no > 0, "gc: step 0 (the prefill) has nothing to compact");
  CompactionPlan plan;
  const size_t k = s.gc_moves.size();
  plan.old_num_slots = static_cast<int32_t>(s2n.size());
  plan.src.assign(k, kNoSlot);
  std::vector<char> old_used(s2n.size(), 0);
  for (size_t i = 0; i < k; ++i) {
    const auto [o, n] = s.gc_moves[i];
    TS_CHECK(o >= 0 && static_cast<size_t>(o) < s2n.size(),
             "gc[" << i << "]: old slot " << o << " outside the cache's " << s2n.size() << " slots");
    TS_CHECK(n >= 0 && static_cast<size_t>(n) < k,
             "gc[" << i << "]: new slot " << n << " outside [0, " << k << "): a compaction's new slots are 0 .. moves - 1");
    TS_CHECK(!old_used[static_cast<size_t>(o)], "gc[" << i << "]: old slot " << o << " is moved twice");
    TS_CHECK(plan.src[static_cast<size_t>(n)] == kNoSlot, "gc[" << i << "]: new slot " << n << " is filled twice");
    old_used[static_cast<size_t>(o)] = 1;
    plan.src[static_cast<size_t>(n)] = o;
  }
  std::vector<int32_t> after(k, kNoNode);
  for (size_t o = 0; o < s2n.size(); ++o) {
    const int32_t id = s2n[o];
    if (id == kNoNode) continue;
    TreeNode& node = tree.node(id);
    if (!old_used[o]) {
      TS_CHECK(node.status != NodeStatus::live,
               "gc: drops slot " << o << " of live node " << id << " (mark it pruned or finished first, or keep its slot)");
      node.slot = kNoSlot;
    }
  }
  for (size_t n = 0; n < k; ++n) {
    const int32_t id = s2n[static_cast<size_t>(plan.src[n])];
    after[n] = id;
    if (id != kNoNode) tree.node(id).slot = static_cast<int32_t>(n);
  }
  s2n = std::move(after);
  return plan;
}

// Validates the step's added nodes and adds them to the copies tree and s2n
// (live with a slot, finished without); returns their ids.
std::vector<int32_t> add_nodes(const ExternalStep& s, TokenTree& tree, std::vector<int32_t>& s2n) {
  std::vector<int32_t> ids;
  for (size_t i = 0; i < s.added.size(); ++i) {
    const ExternalNode& a = s.added[i];
    TS_CHECK(a.parent == kNoNode || (a.parent >= 0 && a.parent < tree.size()),
             "added[" << i << "].parent: node " << a.parent << " does not exist (nodes 0 .. " << tree.size() - 1
                      << " so far; -1 for a root)");
    TS_CHECK(a.token >= 0, "added[" << i << "].token: must be >= 0, got " << a.token);
    // The reader's limit, so what is written is read back (and no slot sizes a huge table).
    TS_CHECK(a.slot >= kNoSlot && a.slot < kTraceMaxSlots,
             "added[" << i << "].slot: must be in [0, " << kTraceMaxSlots << ") (or -1: no K/V), got " << a.slot);
    // -inf is a token the model gave probability 0 (written "-inf", docs/trace-format.md); NaN or +inf is no log-probability.
    TS_CHECK(!std::isnan(a.logprob) && a.logprob != HUGE_VAL,
             "added[" << i << "].logprob: must be a number or -inf, got " << a.logprob);
    if (a.slot >= 0) {
      if (static_cast<size_t>(a.slot) >= s2n.size()) s2n.resize(static_cast<size_t>(a.slot) + 1, kNoNode);
      const int32_t holder = s2n[static_cast<size_t>(a.slot)];
      TS_CHECK(holder == kNoNode, "added[" << i << "].slot: slot " << a.slot << " is still held by node " << holder << " ("
                                           << node_status_name(tree.node(holder).status)
                                           << "): a slot is reused only after a gc frees it");
    }
    const int32_t id = a.parent == kNoNode ? tree.add_root(a.token, 0, a.logprob) : tree.add_child(a.parent, a.token, a.logprob);
    TreeNode& n = tree.node(id);
    n.slot = a.slot;
    n.status = a.slot >= 0 ? NodeStatus::live : NodeStatus::finished;
    if (a.slot >= 0) s2n[static_cast<size_t>(a.slot)] = id;
    ids.push_back(id);
  }
  return ids;
}

// Validates the step's status changes and applies them to the copy tree;
// returns the step record's "status" entries.
json apply_status(const ExternalStep& s, TokenTree& tree) {
  json status = json::array();
  for (size_t i = 0; i < s.status.size(); ++i) {
    const auto& [id, name] = s.status[i];
    TS_CHECK(id >= 0 && id < tree.size(), "status[" << i << "]: node " << id << " does not exist (nodes 0 .. " << tree.size() - 1 << ")");
    NodeStatus st;
    try {
      st = node_status_parse(name);
    } catch (const Error& e) {
      TS_FAIL("status[" << i << "]: " << e.what());
    }
    TS_CHECK(st != NodeStatus::live || tree.node(id).slot != kNoSlot,
             "status[" << i << "]: node " << id << " holds no slot, so it cannot be live");
    tree.node(id).status = st;
    status.push_back({{"node", id}, {"status", name}});
  }
  return status;
}

// The step record's "forward" field: the queries (each a node holding a
// slot), their positions, slots and mask rows, shapes checked.
json forward_record(const ExternalStep& s, const TokenTree& tree) {
  const size_t q = s.queries.size();
  TS_CHECK(q > 0, "queries: a forward pass needs at least one query");
  std::vector<int32_t> slots;
  for (size_t i = 0; i < q; ++i) {
    const int32_t id = s.queries[i];
    TS_CHECK(id >= 0 && id < tree.size(), "queries[" << i << "]: node " << id << " does not exist (nodes 0 .. " << tree.size() - 1 << ")");
    TS_CHECK(tree.node(id).slot != kNoSlot, "queries[" << i << "]: node " << id << " holds no slot (a query writes its K/V into its slot)");
    slots.push_back(tree.node(id).slot);
  }
  TS_CHECK(s.mask.rows == static_cast<int32_t>(q), "mask: " << s.mask.rows << " rows for " << q << " queries (one row per query)");
  TS_CHECK(s.mask.cols >= 1, "mask: needs at least one column");
  TS_CHECK(s.positions.size() == q, "positions: " << s.positions.size() << " entries for " << q << " queries");
  return ForwardView{s.queries, s.positions, std::move(slots), s.mask}.to_json();
}

}  // namespace

ExternalTraceWriter::ExternalTraceWriter(std::string path, std::string engine, std::vector<std::string> vocab, json config,
                                         int32_t keyframe_interval, json model)
    : path_(std::move(path)), rec_(nullptr, keyframe_interval) {
  TS_CHECK(!engine.empty(), "algorithm: the engine's name must not be empty");
  TS_CHECK(config.is_null() || config.is_object(), "config: must be an object (a dict), got " << config.type_name());
  TS_CHECK(model.is_null() || model.is_object(), "model: must be an object (a dict), got " << model.type_name());
  TS_CHECK(!model.contains("type"), "model: \"type\" is always \"external\", leave it out of model");
  TS_CHECK(keyframe_interval >= 1, "keyframe_interval: must be >= 1, got " << keyframe_interval);
  json cfg = config.is_object() ? config : json::object();
  TS_CHECK(!cfg.contains("engine"), "config: \"engine\" is set from algorithm=, leave it out of config");
  cfg["engine"] = engine;
  file_ = std::make_unique<TraceFileWriter>(path_);
  rec_ = TraceRecorder(file_.get(), keyframe_interval);
  json header_model = {{"type", kExternalAlgorithm}};
  if (!vocab.empty()) header_model["vocab_size"] = vocab.size();
  if (model.is_object()) header_model.update(model);
  rec_.header(kExternalAlgorithm, kExternalAlgorithm, cfg, header_model, vocab);
}

ExternalTraceWriter::~ExternalTraceWriter() = default;

void ExternalTraceWriter::check_open() const {
  TS_CHECK(state_ == State::open, path_ << ": the trace writer is already " << (state_ == State::closed ? "closed" : "abandoned"));
}

std::vector<int32_t> ExternalTraceWriter::step(const ExternalStep& s) {
  check_open();
  const int32_t step_no = next_step_;
  // Everything is applied to copies first: an invalid step changes nothing.
  TokenTree tree = tree_;
  std::vector<int32_t> s2n = slot_to_node_;
  CompactionPlan plan;
  if (s.has_gc) plan = apply_gc(s, step_no, tree, s2n);

  TS_CHECK(s.engine.is_null() || s.engine.is_object(), "engine: must be an object (a dict), got " << s.engine.type_name());
  const std::vector<int32_t> ids = add_nodes(s, tree, s2n);
  json status = apply_status(s, tree);

  json fields = json::object();
  json added = json::array();
  for (int32_t id : ids) added.push_back(trace_node(tree.node(id)));
  fields["added"] = std::move(added);
  if (!status.empty()) fields["status"] = std::move(status);
  if (s.has_forward) fields[kForwardField] = forward_record(s, tree);
  peak_ = std::max<int64_t>(peak_, static_cast<int64_t>(s2n.size()));
  fields[kKvField] = KvRecord{.slots = static_cast<int64_t>(s2n.size()), .peak = peak_}.to_json();
  if (s.engine.is_object()) fields["engine"] = s.engine;

  // Valid: commit the state, then write.
  tree_ = std::move(tree);
  slot_to_node_ = std::move(s2n);
  ++next_step_;
  if (s.has_gc) rec_.gc(step_no, plan);
  rec_.step(step_no, step_no == 0 ? "prefill" : "forward", std::move(fields), tree_, num_slots());
  return ids;
}

void ExternalTraceWriter::close(const std::vector<std::vector<int32_t>>& outputs) {
  check_open();
  TS_CHECK(next_step_ > 0, path_ << ": no step recorded: a trace needs at least the prefill");
  json outs = json::array();
  for (const auto& o : outputs) outs.push_back({{"tokens", o}});
  rec_.summary(std::move(outs), json::object(), 0.0, tree_, num_slots());
  file_->commit();
  state_ = State::closed;
}

void ExternalTraceWriter::abandon() {
  if (state_ != State::open) return;
  file_.reset();  // removes the temporary file
  state_ = State::abandoned;
}

}  // namespace triescope
