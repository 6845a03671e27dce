// triescope constraint build|stats|check|csr|random: STATIC constraint sets
// and their CSR transition matrices from the command line.
#include <chrono>
#include <iomanip>
#include <iostream>
#include <sstream>

#include "app/commands.h"
#include "core/common/error.h"
#include "core/constraint/static_constraint.h"
#include "core/constraint/transition_matrix.h"
#include "core/constraint/vntk.h"

namespace triescope::cli {

namespace {

void usage_constraint() {
  std::cout << "usage: triescope constraint <sub> ...\n"
               "  build  <ids> --vocab V [--format text|npy|auto] [--dense-levels d] [--layout stacked|compact]\n"
               "         build the index, print build time and memory\n"
               "  stats  <ids> --vocab V [--dense-levels d]   memory by level and bytes per item, both layouts\n"
               "  check  <ids> --vocab V --id \"t1 t2 ...\" [--dense-levels d] [--layout L]\n"
               "         walk an id through the index (exit 1 when it is not in C)\n"
               "  csr    <ids> --vocab V [--node s]            print P, C, V (stacked CSR) and one node's row\n"
               "  random --items N --length L --vocab V --seed S --out ids.npy|ids.txt\n";
}

int64_t get_int(const ParsedArgs& p, const std::string& name, int64_t lo, int64_t hi, int64_t dflt, bool required = false) {
  TS_CHECK(!required || p.has(name), "constraint: --" << name << " is required");
  try {
    return p.get_int(name, lo, hi, dflt);
  } catch (const Error& e) {
    throw Error(std::string("constraint: ") + e.what());
  }
}

ConstraintSet load(const ParsedArgs& p) {
  TS_CHECK(p.positional.size() == 2, "constraint " << p.positional[0] << ": expected one ids file");
  const int32_t V = static_cast<int32_t>(get_int(p, "vocab", 1, 1 << 30, 0, true));
  return constraint_set_read(p.positional[1], p.get("format", "auto"), V);
}

TransitionMatrixOptions options(const ParsedArgs& p) {
  TransitionMatrixOptions o;
  o.dense_levels = static_cast<int32_t>(get_int(p, "dense-levels", 0, 2, 0));
  o.layout = csr_layout_parse(p.get("layout", "stacked"), "constraint: --layout");
  return o;
}

void print_set(const ConstraintSet& c) {
  std::cout << "set: " << c.origin << ": " << c.size() << " ids, L = " << c.length << ", |V| = " << c.vocab_size << ", "
            << c.duplicates_removed << " duplicates removed" << (c.input_was_sorted ? "" : ", input sorted") << "\n";
}

void print_memory(const TransitionMatrix& tm) {
  const auto j = tm.memory_json();
  const auto& b = j["bytes"];
  std::cout << "layout " << j["layout"].get<std::string>() << ", d = " << tm.dense_levels << ": " << j["states"] << " states, "
            << j["edges"] << " edges\n";
  std::cout << "  bytes: row_ptr " << b["row_ptr"] << ", cols " << b["cols"] << ", next " << b["next"] << ", dense_mask "
            << b["dense_mask"] << ", dense_states " << b["dense_states"] << ", dense_rank " << b["dense_rank"] << ", total "
            << b["total"] << "\n";
  std::cout << std::fixed << std::setprecision(2) << "  CSR bytes per node " << j["csr_bytes_per_node"].get<double>()
            << ", bytes per item " << j["bytes_per_item"].get<double>() << " (= MB per 1M items)\n";
  std::cout << "  level  nodes        B_l   CSR bytes   dense\n";
  for (auto& l : j["levels"])
    std::cout << "  " << std::setw(5) << l["level"].get<int>() << "  " << std::setw(11) << l["nodes"].get<int64_t>() << "  "
              << std::setw(5) << l["max_branch"].get<int>() << "  " << std::setw(10) << l["csr_bytes"].get<int64_t>() << "  "
              << (l["dense"].get<bool>() ? "yes" : "") << "\n";
}

template <class Vec>
std::string list(const Vec& v, int64_t from, int64_t to) {
  std::ostringstream os;
  os << "[";
  for (int64_t i = from; i < to; ++i) os << (i > from ? ", " : "") << v(i);
  os << "]";
  return os.str();
}

}  // namespace

int cmd_constraint(const Args& args) {
  auto p = parse_args(args, {"vocab", "format", "dense-levels", "layout", "id", "node", "items", "length", "seed", "out"}, {});
  if (p.positional.empty()) {
    usage_constraint();
    return 2;
  }
  const std::string sub = p.positional[0];
  if (sub == "random") {
    TS_CHECK(p.positional.size() == 1, "constraint random: takes no positional arguments");
    const auto c = constraint_set_random(get_int(p, "items", 1, int64_t{1} << 32, 0, true),
                                         static_cast<int32_t>(get_int(p, "length", 1, 1024, 0, true)),
                                         static_cast<int32_t>(get_int(p, "vocab", 1, 1 << 30, 0, true)),
                                         static_cast<uint64_t>(get_int(p, "seed", 0, INT64_MAX, 1)));
    const std::string out = p.get("out");
    TS_CHECK(!out.empty(), "constraint random: --out is required");
    if (out.size() > 4 && out.compare(out.size() - 4, 4, ".npy") == 0) constraint_set_write_npy(c, out);
    else constraint_set_write_text(c, out);
    print_set(c);
    std::cout << "wrote " << out << "\n";
    return 0;
  }
  if (sub == "build") {
    const auto t0 = std::chrono::steady_clock::now();
    const auto c = load(p);
    const auto t1 = std::chrono::steady_clock::now();
    const auto tm = TransitionMatrix::build(c, options(p));
    const auto t2 = std::chrono::steady_clock::now();
    print_set(c);
    std::cout << std::fixed << std::setprecision(3) << "read + sort: " << std::chrono::duration<double>(t1 - t0).count()
              << " s, build: " << std::chrono::duration<double>(t2 - t1).count() << " s\n";
    print_memory(tm);
    return 0;
  }
  if (sub == "stats") {
    const auto c = load(p);
    print_set(c);
    for (auto layout : {CsrLayout::stacked, CsrLayout::compact}) {
      auto o = options(p);
      o.layout = layout;
      print_memory(TransitionMatrix::build(c, o));
    }
    return 0;
  }
  if (sub == "csr") {
    const auto c = load(p);
    const auto tm = TransitionMatrix::build(c, {0, CsrLayout::stacked});
    print_set(c);
    const int64_t S = tm.num_states(), E = tm.num_edges();
    TS_CHECK(S <= 10000 || p.has("node"), "constraint csr: " << S << " states is too many to print; pass --node s");
    auto P = [&](int64_t i) { return tm.row_ptr[static_cast<size_t>(i)]; };
    auto C = [&](int64_t e) { return tm.edges[static_cast<size_t>(e) * 2]; };
    auto Vn = [&](int64_t e) { return tm.edges[static_cast<size_t>(e) * 2 + 1]; };
    if (S <= 10000) {
      std::cout << "P = " << list(P, 0, S + 1) << "\n";
      std::cout << "C = " << list(C, 0, E) << "\n";
      std::cout << "V = " << list(Vn, 0, E) << "\n";
      std::cout << "B = " << list([&](int64_t l) { return tm.max_branch[static_cast<size_t>(l)]; }, 0, tm.length) << "  (max branch per level)\n";
    }
    if (p.has("node")) {
      const int64_t s = get_int(p, "node", 0, S - 1, 0);
      const int64_t a = P(s), b = P(s + 1);
      std::cout << "node " << s << " (level " << tm.level_of(s) << "): row_start = P[" << s << "] = " << a << ", row_end = P[" << s + 1
                << "] = " << b << ", C[" << a << ":" << b << "] = " << list(C, a, b) << ", V[" << a << ":" << b << "] = " << list(Vn, a, b)
                << "\n";
    }
    return 0;
  }
  if (sub == "check") {
    auto set = std::make_shared<const ConstraintSet>(load(p));
    const auto o = options(p);
    const auto tm = std::make_shared<const TransitionMatrix>(TransitionMatrix::build(*set, o));
    const std::vector<int32_t> id = token_ids_parse(p.get("id"), "constraint check: --id token");
    TS_CHECK(static_cast<int32_t>(id.size()) == set->length, "constraint check: --id has " << id.size() << " tokens, the set's ids have " << set->length);
    int64_t s = 0;
    bool ok = true;
    for (int32_t t = 0; t < set->length && ok; ++t) {
      const int32_t tok = id[static_cast<size_t>(t)];
      std::cout << "step " << t << ": state " << s;
      if (t < tm->dense_levels) std::cout << " (dense level)";
      else std::cout << " row [" << tm->row_begin(s) << ", " << tm->row_end(s) << "), B_" << t << " = " << tm->max_branch[static_cast<size_t>(t)];
      const int64_t nxt = (tok >= 0 && tok < set->vocab_size) ? static_next_state(*tm, s, tok, t) : kDeadState;
      std::cout << ", token " << tok << " -> " << (nxt == kDeadState ? std::string("not allowed") : "state " + std::to_string(nxt)) << "\n";
      ok = nxt != kDeadState;
      s = nxt;
    }
    const bool member = set->contains(id);
    TS_CHECK(member == ok, "constraint check: index and set disagree on this id (internal error)");
    std::cout << (member ? "in C\n" : "not in C\n");
    return member ? 0 : 1;
  }
  usage_constraint();
  TS_FAIL("constraint: unknown subcommand '" << sub << "'");
}

}  // namespace triescope::cli
