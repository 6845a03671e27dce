// The one token tree of the project: beam tries, forests of draft trees, the
// MultiGen star and lookahead candidate tries are all instances of it.
// docs/architecture.md: a token attends to its ancestors; its position is its depth.
#pragma once
#include <cstdint>
#include <string_view>
#include <vector>

namespace triescope {

enum class NodeStatus : uint8_t { live, pruned, finished, accepted, rejected };

std::string_view node_status_name(NodeStatus s);
NodeStatus node_status_parse(std::string_view s);  // throws Error on unknown

inline constexpr int32_t kNoNode = -1;
inline constexpr int32_t kNoSlot = -1;

struct TreeNode {
  int32_t id = kNoNode;
  int32_t parent = kNoNode;  // kNoNode for a root
  int32_t token = 0;
  int32_t depth = 0;       // == position id (docs/architecture.md)
  int32_t slot = kNoSlot;  // KV slot holding this token, kNoSlot if none/collected
  double logprob = 0.0;    // cumulative log-probability of the path ending here
  NodeStatus status = NodeStatus::live;
};

class TokenTree {
 public:
  // Roots start at depth `root_depth` (0 for a fresh prompt); a child's depth
  // is its parent's plus one. Ids are dense and never reused.
  int32_t add_root(int32_t token, int32_t root_depth = 0, double logprob = 0.0);
  int32_t add_child(int32_t parent, int32_t token, double logprob);
  // Adds a chain (e.g. a prompt) below `parent` (kNoNode: a new root); returns the ids.
  std::vector<int32_t> add_chain(int32_t parent, const std::vector<int32_t>& tokens);

  const TreeNode& node(int32_t id) const { return nodes_.at(static_cast<size_t>(id)); }
  TreeNode& node(int32_t id) { return nodes_.at(static_cast<size_t>(id)); }
  int32_t size() const { return static_cast<int32_t>(nodes_.size()); }
  const std::vector<TreeNode>& nodes() const { return nodes_; }
  const std::vector<int32_t>& children(int32_t id) const { return children_.at(static_cast<size_t>(id)); }
  const std::vector<int32_t>& roots() const { return roots_; }

  // Root-to-node token path and node path.
  std::vector<int32_t> path_tokens(int32_t id) const;
  std::vector<int32_t> path_nodes(int32_t id) const;
  bool is_ancestor_or_self(int32_t ancestor, int32_t id) const;

  // Serialisation orders: insertion (id order) and DFS per tree, trees in root
  // order, children in insertion order (the DSBD forest layout, its Figure 3).
  std::vector<int32_t> order_insertion() const;
  std::vector<int32_t> order_dfs() const;

  // Marks `id` and every ancestor whose children are all neither live nor
  // accepted as pruned, stopping at the first ancestor that still has one and
  // at depth `floor_depth` (nodes above it, e.g. the prompt, are never pruned).
  // A finished child (EOS) keeps no ancestor alive: its hypothesis is stored,
  // and garbage collection frees the branch's slots like any pruned branch.
  // Returns the nodes whose status changed (a trace must record all of them).
  std::vector<int32_t> prune_upwards(int32_t id, int32_t floor_depth = 0);

 private:
  std::vector<TreeNode> nodes_;
  std::vector<std::vector<int32_t>> children_;
  std::vector<int32_t> roots_;
};

}  // namespace triescope
