#include "core/analysis/mask_cell_explain.h"

#include <algorithm>
#include <sstream>

#include "core/common/error.h"

namespace triescope {

const char* cell_relation_name(CellRelation r) {
  switch (r) {
    case CellRelation::self: return "itself";
    case CellRelation::parent: return "parent";
    case CellRelation::ancestor: return "ancestor";
    case CellRelation::prompt: return "prompt";
    case CellRelation::descendant: return "descendant";
    case CellRelation::other_branch: return "another branch";
    case CellRelation::free_slot: return "free slot";
    case CellRelation::not_written: return "not written";
    case CellRelation::other_copy: return "another copy";
    case CellRelation::unknown_query: return "no query node";
  }
  return "?";
}

bool cell_relation_attends(CellRelation r) {
  return r == CellRelation::self || r == CellRelation::parent || r == CellRelation::ancestor || r == CellRelation::prompt;
}

std::string token_display(const TraceReplay& t, int32_t token, size_t max_chars) {
  std::string out;
  size_t chars = 0, cut = std::string::npos;
  for (char ch : t.token_text(token)) {
    const bool starts_char = (static_cast<unsigned char>(ch) & 0xC0) != 0x80;
    if (starts_char && ++chars == max_chars) cut = out.size();
    if (ch == ' ') out += "\u2423";
    else if (ch == '\n') out += "\\n";
    else if (ch == '\t') out += "\\t";
    else out += ch;
  }
  // Escapes count as one character each here; the GUI's token_label counts
  // them the same way (QString length after replacing).
  if (chars > max_chars && cut != std::string::npos) out = out.substr(0, cut) + "\u2026";
  return out;
}

int32_t trace_prompt_length(const TraceReplay& t) { return t.header_record().prompt_length(); }

namespace {

std::string quoted(const MaskCellSource& s, int32_t token) {
  return "'" + (s.token_text ? s.token_text(token) : std::to_string(token)) + "'";
}

const TreeNode* node_at(const StepView& v, int32_t id) {
  return id >= 0 && static_cast<size_t>(id) < v.nodes.size() ? &v.nodes[static_cast<size_t>(id)] : nullptr;
}

int32_t writer_row(const ForwardView& f, int32_t col) {
  for (size_t r = 0; r < f.slots.size(); ++r)
    if (f.slots[r] == col) return static_cast<int32_t>(r);
  return -1;
}

// The relation of key node k to query node q in the tree, and the path
// between them (query first).
void relate_nodes(const MaskCellSource& s, int32_t q, int32_t k, MaskCellExplanation& e) {
  const StepView& v = *s.view;
  std::vector<int32_t> up;  // q, its parent, ... the root
  for (int32_t a = q; node_at(v, a) && up.size() <= v.nodes.size(); a = v.nodes[static_cast<size_t>(a)].parent) up.push_back(a);
  const auto hit = std::find(up.begin(), up.end(), k);
  if (hit != up.end()) {
    e.generations = static_cast<int32_t>(hit - up.begin());
    e.path.assign(up.begin(), hit + 1);
    e.relation = e.generations == 0 ? CellRelation::self
                 : v.nodes[static_cast<size_t>(k)].depth < s.prompt_len ? CellRelation::prompt
                 : e.generations == 1 ? CellRelation::parent
                                      : CellRelation::ancestor;
    return;
  }
  std::vector<int32_t> down;  // k, its parent, ... up to the first node on q's chain
  int32_t a = k;
  for (; node_at(v, a) && down.size() <= v.nodes.size(); a = v.nodes[static_cast<size_t>(a)].parent) {
    if (std::find(up.begin(), up.end(), a) != up.end()) break;
    down.push_back(a);
  }
  const auto meet = std::find(up.begin(), up.end(), a);
  e.path.assign(up.begin(), meet == up.end() ? up.end() : meet + 1);
  e.path.insert(e.path.end(), down.rbegin(), down.rend());
  if (a == q) {
    e.relation = CellRelation::descendant;
    e.generations = static_cast<int32_t>(down.size());
    return;
  }
  e.relation = CellRelation::other_branch;
  e.common_ancestor = meet == up.end() ? kNoNode : a;
  e.sibling = meet != up.end() && meet == up.begin() + 1 && down.size() == 1;
}

void explain_tree(const MaskCellSource& s, int32_t row, int32_t col, MaskCellExplanation& e) {
  const StepView& v = *s.view;
  const ForwardView& f = *s.pass;
  e.query = static_cast<size_t>(row) < f.queries.size() ? f.queries[static_cast<size_t>(row)] : kNoNode;
  e.key = s.layout ? s.layout->node_in_slot(col) : kNoNode;
  if (!node_at(v, e.key)) e.key = kNoNode;
  if (e.key != kNoNode) e.key_position = v.nodes[static_cast<size_t>(e.key)].depth;
  e.key_writer_row = writer_row(f, col);
  if (!node_at(v, e.query)) {
    e.relation = CellRelation::unknown_query;
    return;
  }
  if (e.key == kNoNode) {
    e.relation = CellRelation::free_slot;
    e.path = {e.query};
    // The pre-gc layout is rebuilt from the gc moves: a slot no move left
    // from held a node the gc after the pass collected (its id is not recorded).
    e.collected_after_pass = s.layout && s.layout->before_gc && col < v.gc_slots_before;
    return;
  }
  relate_nodes(s, e.query, e.key, e);
}

void explain_copies(const MaskCellSource& s, int32_t row, int32_t col, MaskCellExplanation& e) {
  const CopyLayout& L = *s.copies;
  if (L.prompt <= 0 || L.region <= 0) return;
  const CopyRow where = copy_row(s.view->step, row, L.prompt);
  e.query_copy = static_cast<int32_t>(where.copy);
  e.key_copy = col / L.region;
  e.key_position = col % L.region;
  e.key_writer_row = writer_row(*s.pass, col);
  const int32_t pos = static_cast<int32_t>(where.position);
  e.query_copy_position = pos;
  if (e.key_copy != e.query_copy) e.relation = CellRelation::other_copy;
  else if (e.key_position > pos) e.relation = CellRelation::not_written;
  else {
    e.generations = pos - e.key_position;
    e.relation = e.generations == 0            ? CellRelation::self
                 : e.key_position < L.prompt   ? CellRelation::prompt
                 : e.generations == 1          ? CellRelation::parent
                                               : CellRelation::ancestor;
  }
}

// mask_check on the row: the faults on this cell and on the row itself.
void attach_faults(const MaskCellSource& s, int32_t row, int32_t col, MaskCellExplanation& e) {
  std::vector<MaskViolation> faults;
  try {
    if (s.copies) mask_check_copies_row(*s.view, *s.pass, s.copies->region, s.copies->prompt, row, faults, SIZE_MAX);
    else if (s.layout) mask_check_tree_row(*s.view, *s.pass, *s.layout, row, faults, SIZE_MAX);
  } catch (const Error& err) {
    e.check_error = err.what();
  }
  for (MaskViolation& m : faults) {
    if (m.fault == MaskFault::wrong_position || m.fault == MaskFault::wrong_slot) e.row_faults.push_back(std::move(m));
    else if (m.slot == col) e.cell_faults.push_back(std::move(m));
  }
  e.agrees = e.cell_faults.empty();
}

std::string kinship(const MaskCellExplanation& e) {
  const int32_t g = e.generations;
  if (e.relation == CellRelation::descendant)
    return g == 1 ? "its child" : g == 2 ? "its grandchild" : "below it, " + std::to_string(g) + " generations down";
  return g == 1 ? "its parent" : g == 2 ? "its grandparent" : "its ancestor " + std::to_string(g) + " generations up";
}

std::string node_words(const MaskCellSource& s, int32_t id) {
  const TreeNode& n = s.view->nodes[static_cast<size_t>(id)];
  return quoted(s, n.token) + " (node " + std::to_string(id) + ")";
}

std::string tree_sentence(const MaskCellSource& s, const MaskCellExplanation& e) {
  const StepView& v = *s.view;
  std::ostringstream os;
  if (e.relation == CellRelation::unknown_query) {
    os << "row " << e.row << " names no node of the tree";
    return os.str();
  }
  const TreeNode& qn = v.nodes[static_cast<size_t>(e.query)];
  os << "query " << quoted(s, qn.token) << " (node " << e.query << ", position " << e.query_position << ") "
     << (e.bit ? "reads" : "does not read") << " slot " << e.col;
  if (e.key == kNoNode) {
    os << ": slot " << e.col << " is free";
    if (e.collected_after_pass) os << " (its node was collected by this step's gc, after the pass)";
    return os.str();
  }
  os << " " << quoted(s, v.nodes[static_cast<size_t>(e.key)].token) << " (node " << e.key << ", position " << e.key_position << "): ";
  switch (e.relation) {
    case CellRelation::self: os << "its own slot"; break;
    case CellRelation::parent:
    case CellRelation::ancestor: os << kinship(e); break;
    case CellRelation::prompt: os << kinship(e) << ", in the prompt"; break;
    case CellRelation::descendant: os << kinship(e); break;
    case CellRelation::other_branch:
      if (e.common_ancestor == kNoNode) os << "another tree of the forest (no common ancestor)";
      else if (e.sibling) os << "a sibling on another branch (common ancestor " << node_words(s, e.common_ancestor) << ", its parent)";
      else os << "on another branch (common ancestor " << node_words(s, e.common_ancestor) << ")";
      break;
    default: break;
  }
  if (e.key_writer_row >= 0 && e.relation != CellRelation::self) os << "; written by this pass (row " << e.key_writer_row << ")";
  return os.str();
}

std::string copy_words(const MaskCellSource& s, int32_t copy, int32_t pos) {
  std::ostringstream os;
  os << "beam " << copy << "'s copy, position " << pos;
  const auto* t = s.copy_tokens;
  if (t && copy >= 0 && static_cast<size_t>(copy) < t->size() && pos >= 0 && static_cast<size_t>(pos) < (*t)[static_cast<size_t>(copy)].size())
    os << " " << quoted(s, (*t)[static_cast<size_t>(copy)][static_cast<size_t>(pos)]);
  return os.str();
}

std::string copies_sentence(const MaskCellSource& s, const MaskCellExplanation& e) {
  std::ostringstream os;
  const int32_t pos = e.query_copy_position;
  os << "row " << e.row << " (" << copy_words(s, e.query_copy, pos) << ", slot " << e.query_slot << ") " << (e.bit ? "reads" : "does not read")
     << " slot " << e.col << " (" << copy_words(s, e.key_copy, e.key_position) << "): ";
  switch (e.relation) {
    case CellRelation::self: os << "its own slot"; break;
    case CellRelation::parent:
    case CellRelation::ancestor: os << "its own copy of " << kinship(e); break;
    case CellRelation::prompt: os << "its own copy of " << kinship(e) << ", in the prompt"; break;
    case CellRelation::not_written:
      if (e.key_writer_row >= 0) os << "a later position of its copy, written later in this pass (row " << e.key_writer_row << ")";
      else os << "a later position of its copy, not written yet";
      break;
    case CellRelation::other_copy:
      os << "another beam's copy";
      if (e.key_position <= pos && s.copies) os << " (its own copy of position " << e.key_position << " is slot " << e.query_copy * s.copies->region + e.key_position << ")";
      break;
    default: break;
  }
  return os.str();
}

std::string faults_sentence(const MaskCellExplanation& e, bool copies) {
  std::ostringstream os;
  const char* rule = copies ? "the copy layout (a row reads exactly its own copy up to its position)"
                            : "the ancestor rule (a token attends to exactly its ancestors and itself)";
  for (const MaskViolation& m : e.cell_faults)
    os << "breaks " << rule << ": " << mask_fault_name(m.fault) << " (expected " << m.expected << ", found " << m.found << ")";
  for (const MaskViolation& m : e.row_faults) {
    if (os.tellp() > 0) os << "; ";
    os << "row " << e.row << " breaks " << (m.fault == MaskFault::wrong_position ? "position = depth" : "its slot") << ": "
       << mask_fault_name(m.fault) << " (expected " << m.expected << ", found " << m.found << ")";
  }
  if (!e.check_error.empty()) os << (os.tellp() > 0 ? "; " : "") << "check: " << e.check_error;
  return os.str();
}

}  // namespace

MaskCellExplanation mask_cell_explain(const MaskCellSource& s, int32_t row, int32_t col) {
  MaskCellExplanation e;
  e.row = row;
  e.col = col;
  if (!s.view || !s.pass || row < 0 || col < 0 || row >= s.pass->mask.rows || col >= s.pass->mask.cols) return e;
  const ForwardView& f = *s.pass;
  e.bit = f.mask.test(row, col);
  if (static_cast<size_t>(row) < f.positions.size()) e.query_position = f.positions[static_cast<size_t>(row)];
  if (static_cast<size_t>(row) < f.slots.size()) e.query_slot = f.slots[static_cast<size_t>(row)];
  if (s.copies) explain_copies(s, row, col, e);
  else explain_tree(s, row, col, e);
  attach_faults(s, row, col, e);
  e.sentence = s.copies ? copies_sentence(s, e) : tree_sentence(s, e);
  e.fault_text = faults_sentence(e, s.copies.has_value());
  return e;
}

}  // namespace triescope
