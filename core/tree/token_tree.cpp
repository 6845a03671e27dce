#include "core/tree/token_tree.h"

#include <algorithm>
#include <string>

#include "core/common/error.h"

namespace triescope {

std::string_view node_status_name(NodeStatus s) {
  switch (s) {
    case NodeStatus::live: return "live";
    case NodeStatus::pruned: return "pruned";
    case NodeStatus::finished: return "finished";
    case NodeStatus::accepted: return "accepted";
    case NodeStatus::rejected: return "rejected";
  }
  return "live";
}

NodeStatus node_status_parse(std::string_view s) {
  for (auto st : {NodeStatus::live, NodeStatus::pruned, NodeStatus::finished, NodeStatus::accepted,
                  NodeStatus::rejected})
    if (node_status_name(st) == s) return st;
  TS_FAIL("unknown node status '" << std::string(s)
                                  << "' (expected live, pruned, finished, accepted or rejected)");
}

int32_t TokenTree::add_root(int32_t token, int32_t root_depth, double logprob) {
  TreeNode n;
  n.id = size();
  n.token = token;
  n.depth = root_depth;
  n.logprob = logprob;
  nodes_.push_back(n);
  children_.emplace_back();
  roots_.push_back(n.id);
  return n.id;
}

int32_t TokenTree::add_child(int32_t parent, int32_t token, double logprob) {
  TS_CHECK(parent >= 0 && parent < size(), "token tree: parent " << parent << " out of range [0, " << size() << ")");
  TreeNode n;
  n.id = size();
  n.parent = parent;
  n.token = token;
  n.depth = nodes_[static_cast<size_t>(parent)].depth + 1;
  n.logprob = logprob;
  nodes_.push_back(n);
  children_.emplace_back();
  children_[static_cast<size_t>(parent)].push_back(n.id);
  return n.id;
}

std::vector<int32_t> TokenTree::add_chain(int32_t parent, const std::vector<int32_t>& tokens) {
  std::vector<int32_t> ids;
  ids.reserve(tokens.size());
  for (int32_t t : tokens) {
    parent = parent == kNoNode ? add_root(t) : add_child(parent, t, 0.0);
    ids.push_back(parent);
  }
  return ids;
}

std::vector<int32_t> TokenTree::path_nodes(int32_t id) const {
  std::vector<int32_t> p;
  for (int32_t n = id; n != kNoNode; n = node(n).parent) p.push_back(n);
  std::reverse(p.begin(), p.end());
  return p;
}

std::vector<int32_t> TokenTree::path_tokens(int32_t id) const {
  std::vector<int32_t> p = path_nodes(id);
  for (auto& n : p) n = node(n).token;
  return p;
}

bool TokenTree::is_ancestor_or_self(int32_t ancestor, int32_t id) const {
  const int32_t target_depth = node(ancestor).depth;
  for (int32_t n = id; n != kNoNode && node(n).depth >= target_depth; n = node(n).parent)
    if (n == ancestor) return true;
  return false;
}

std::vector<int32_t> TokenTree::order_insertion() const {
  std::vector<int32_t> o(nodes_.size());
  for (size_t i = 0; i < o.size(); ++i) o[i] = static_cast<int32_t>(i);
  return o;
}

std::vector<int32_t> TokenTree::order_dfs() const {
  std::vector<int32_t> out, stack;
  out.reserve(nodes_.size());
  for (int32_t r : roots_) {
    stack.push_back(r);
    while (!stack.empty()) {
      int32_t n = stack.back();
      stack.pop_back();
      out.push_back(n);
      const auto& ch = children(n);
      for (auto it = ch.rbegin(); it != ch.rend(); ++it) stack.push_back(*it);
    }
  }
  return out;
}

std::vector<int32_t> TokenTree::prune_upwards(int32_t id, int32_t floor_depth) {
  std::vector<int32_t> changed;
  for (int32_t n = id; n != kNoNode && node(n).depth >= floor_depth; n = node(n).parent) {
    if (n != id) {
      const bool keep = std::any_of(children(n).begin(), children(n).end(), [&](int32_t c) {
        const auto st = node(c).status;
        return st == NodeStatus::live || st == NodeStatus::accepted;
      });
      if (keep) break;
    }
    if (node(n).status == NodeStatus::live) {
      node(n).status = NodeStatus::pruned;
      changed.push_back(n);
    }
  }
  return changed;
}

}  // namespace triescope
