// triescope.ConstraintIndex: STATIC's CSR transition matrix and VNTK (core/constraint/).
#include <cmath>
#include <mutex>
#include <limits>
#include <memory>

#include <pybind11/stl.h>

#include "python/bindings/bindings.h"
#include "python/bindings/py_convert.h"
#include "core/common/error.h"
#include "core/constraint/constraint_set.h"
#include "core/constraint/static_step.h"
#include "core/constraint/transition_matrix.h"
#include "core/constraint/vntk.h"

namespace triescope::py {

namespace {

struct PyConstraintIndex {
  std::shared_ptr<const ConstraintSet> set;
  std::shared_ptr<const TransitionMatrix> tm;
  std::unique_ptr<VntkIndex> index;
};

// triescope.StaticDecoder: the index's whole STATIC step (StaticStep) with
// its workspace, kept across calls. The step runs without the GIL, so calls
// from several Python threads take turns on the workspace (`busy`); each
// call's result is its own.
struct PyStaticDecoder {
  std::shared_ptr<const TransitionMatrix> tm;
  StaticStep step;
  std::mutex busy;
  explicit PyStaticDecoder(std::shared_ptr<const TransitionMatrix> m) : tm(std::move(m)), step(*tm) {}
};

// Each prefix's state: the walk from the root (a token outside the vocab, or
// one the set does not allow, leaves the row dead: it then allows nothing).
std::vector<int64_t> prefix_states(const PyConstraintIndex& c, const std::vector<std::vector<int64_t>>& prefixes, size_t step) {
  std::vector<int64_t> states(prefixes.size());
  for (size_t i = 0; i < prefixes.size(); ++i) {
    const auto& p = prefixes[i];
    TS_CHECK(p.size() == step, "generated[" << i << "]: " << p.size() << " tokens, row 0 has " << step);
    int64_t st = c.index->root_state();
    for (size_t t = 0; t < step && st != kDeadState; ++t) {
      const int64_t tok = p[t];
      st = tok < 0 || tok >= c.set->vocab_size ? kDeadState : c.index->next_state(st, static_cast<int32_t>(tok), static_cast<int32_t>(t));
    }
    states[i] = st;
  }
  return states;
}

// Masks `scores` [n x vocab_size] (float32, in place) for rows at `states`,
// level `step`; `rows_name` names what gave the states in errors.
void mask_at_states(PyConstraintIndex& c, const std::vector<int64_t>& states, size_t step, pyb::handle scores, const char* rows_name) {
  auto s = float_rows_inplace(scores, "scores");
  const auto n = s.shape(0), V = s.shape(1);
  TS_CHECK(static_cast<pyb::ssize_t>(states.size()) == n, rows_name << ": " << states.size() << " rows for " << n << " rows of scores");
  TS_CHECK(V == c.set->vocab_size, "scores: " << V << " columns, the index was built for vocab_size " << c.set->vocab_size);
  TS_CHECK(step < static_cast<size_t>(c.set->length),
           "step " << step << ": every sequence of the set has " << c.set->length << " tokens (generate at most that many new tokens)");
  pyb::gil_scoped_release release;
  c.index->mask(states.data(), static_cast<int32_t>(n), static_cast<int32_t>(step), s.mutable_data(), nullptr, nullptr);
}

template <class T>
pyb::array_t<T> copy_array(const std::vector<T>& v) {
  pyb::array_t<T> a(static_cast<pyb::ssize_t>(v.size()));
  std::copy(v.begin(), v.end(), a.mutable_data());
  return a;
}

// ConstraintIndex(sequences, vocab_size, dense_levels, layout): the rows
// checked and flattened, built into the set, the CSR matrix and VNTK.
std::unique_ptr<PyConstraintIndex> constraint_index_new(pyb::object sequences, int32_t vocab_size, int32_t dense_levels,
                                                        const std::string& layout) {
  const auto rows = int_rows(sequences, "sequences");
  TS_CHECK(!rows.empty(), "sequences: empty (no valid sequence)");
  const size_t L = rows.front().size();
  std::vector<int32_t> flat;
  flat.reserve(rows.size() * L);
  for (size_t i = 0; i < rows.size(); ++i) {
    TS_CHECK(rows[i].size() == L, "sequences[" << i << "]: " << rows[i].size() << " tokens, the first row has " << L);
    for (size_t k = 0; k < L; ++k) {
      TS_CHECK(rows[i][k] >= 0 && rows[i][k] < vocab_size,
               "sequences[" << i << "][" << k << "]: token " << rows[i][k] << " outside [0, vocab_size = " << vocab_size << ")");
      flat.push_back(static_cast<int32_t>(rows[i][k]));
    }
  }
  auto out = std::make_unique<PyConstraintIndex>();
  out->set = std::make_shared<const ConstraintSet>(
      constraint_set_from_rows(std::move(flat), static_cast<int32_t>(L), vocab_size, "sequences", "row"));
  TransitionMatrixOptions opt;
  opt.dense_levels = dense_levels;
  opt.layout = csr_layout_parse(layout, "layout");
  TS_CHECK(dense_levels >= 0 && dense_levels <= 2 && dense_levels < static_cast<int32_t>(L),
           "dense_levels: must be 0, 1 or 2 and below the length " << L << ", got " << dense_levels);
  out->tm = std::make_shared<const TransitionMatrix>(TransitionMatrix::build(*out->set, opt));
  out->index = std::make_unique<VntkIndex>(out->tm);
  return out;
}

// StaticDecoder.step: the arguments checked, one StaticStep run (without
// the GIL, taking turns on the workspace), the result as [groups x k] arrays.
pyb::dict static_decoder_step(PyStaticDecoder& d, pyb::object logits, pyb::object states, pyb::object beam_scores, int32_t groups,
                              int32_t k, int32_t step) {
  const auto lg = float_rows(logits, "logits");
  const std::vector<int64_t> st = int_vector(states, "states");
  const auto sc = pyb::array_t<double, pyb::array::c_style | pyb::array::forcecast>::ensure(numpy_of(beam_scores));
  TS_CHECK(sc && sc.ndim() == 1, "beam_scores: expected a 1-D float array");
  const auto n = lg.shape(0), V = lg.shape(1);
  TS_CHECK(V == d.tm->vocab_size, "logits: " << V << " columns, the index was built for vocab_size " << d.tm->vocab_size);
  TS_CHECK(static_cast<pyb::ssize_t>(st.size()) == n && sc.shape(0) == n,
           "states, beam_scores: " << st.size() << " and " << sc.shape(0) << " entries for " << n << " rows of logits");
  TS_CHECK(groups >= 1 && n % groups == 0, "groups: " << groups << " must be >= 1 and divide the " << n << " rows");
  // k past a group's candidates (rows x vocabulary) only asks for memory.
  const int64_t candidates = static_cast<int64_t>(n / groups) * V;
  TS_CHECK(k >= 1 && k <= candidates, "k: must be in [1, " << candidates << "] (a group's rows x vocab_size), got " << k);
  TS_CHECK(step >= 0 && step < d.tm->length, "step: " << step << " outside [0, L = " << d.tm->length << ")");
  for (pyb::ssize_t i = 0; i < n; ++i)
    TS_CHECK(!std::isnan(sc.data()[i]) && sc.data()[i] != std::numeric_limits<double>::infinity(),
             "beam_scores[" << i << "]: " << sc.data()[i] << " (a score is finite, or -inf for a dead beam)");
  StaticStepResult r;
  {
    pyb::gil_scoped_release release;
    const std::lock_guard<std::mutex> lock(d.busy);
    d.step.run(lg.data(), st.data(), sc.data(), static_cast<int32_t>(n), groups, k, step, r);
  }
  const std::vector<pyb::ssize_t> shape{groups, k};
  pyb::array_t<int64_t> tokens(shape), parents(shape), next(shape);
  pyb::array_t<double> scores(shape);
  for (size_t i = 0; i < r.flat.size(); ++i) {
    const bool hit = r.flat[i] >= 0;
    tokens.mutable_data()[i] = hit ? r.flat[i] % V : -1;
    parents.mutable_data()[i] = hit ? r.flat[i] / V : -1;
    next.mutable_data()[i] = hit ? r.next[i] : -1;
    scores.mutable_data()[i] = hit ? r.score[i] : -std::numeric_limits<double>::infinity();
  }
  pyb::dict out;
  out["tokens"] = tokens;
  out["parents"] = parents;
  out["scores"] = scores;
  out["next_states"] = next;
  out["count"] = copy_array(r.count);
  return out;
}

// triescope.ConstraintIndex.
void bind_constraint_index(pyb::module_& m) {
  pyb::class_<PyConstraintIndex>(m, "ConstraintIndex", R"doc(STATIC's constraint index over a set of valid id sequences.

ConstraintIndex(sequences, vocab_size, dense_levels=0, layout="stacked")

sequences: integer array [n x L] (numpy, torch or a list of lists), each row
one valid sequence of L tokens in [0, vocab_size). Built into the CSR
transition matrix and masked with the Vectorized Node Transition Kernel
(STATIC Alg. 1-2), the C++ code triescope's own decoders use.)doc")
      .def(pyb::init(&constraint_index_new),
           pyb::arg("sequences"), pyb::arg("vocab_size"), pyb::arg("dense_levels") = 0, pyb::arg("layout") = "stacked")
      .def_property_readonly("length", [](const PyConstraintIndex& c) { return c.set->length; }, "L, the tokens per sequence.")
      .def_property_readonly("vocab_size", [](const PyConstraintIndex& c) { return c.set->vocab_size; })
      .def_property_readonly("size", [](const PyConstraintIndex& c) { return c.set->size(); }, "Distinct sequences in the set.")
      .def_property_readonly("memory_bytes", [](const PyConstraintIndex& c) { return c.index->memory_bytes(); })
      .def("__len__", [](const PyConstraintIndex& c) { return c.set->size(); })
      .def(
          "contains",
          [](const PyConstraintIndex& c, pyb::object seq) {
            return c.set->contains(int32_vector(seq, "sequence"));
          },
          pyb::arg("sequence"), "True when `sequence` is one of the set's sequences.")
      .def(
          "mask_",
          [](PyConstraintIndex& c, pyb::object generated, pyb::object scores) {
            const auto prefixes = int_rows(generated, "generated");
            const size_t step = prefixes.empty() ? 0 : prefixes.front().size();
            TS_CHECK(step < static_cast<size_t>(c.set->length),
                     "generated: " << step << " tokens already, every sequence of the set has " << c.set->length
                                   << " (generate at most that many new tokens)");
            mask_at_states(c, prefix_states(c, prefixes, step), step, scores, "generated");
          },
          pyb::arg("generated"), pyb::arg("scores"),
          R"doc(Masks `scores` in place: -inf for every token the set does not allow after each row's prefix.

generated: integer [n x t] (the tokens generated so far, t < L), scores:
float32 [n x vocab_size], C-contiguous and writable (a numpy array or a CPU
torch tensor, which is changed in place).)doc")
      .def_property_readonly("root_state", [](const PyConstraintIndex& c) { return c.index->root_state(); },
                             "The state of the empty prefix.")
      .def(
          "states",
          [](const PyConstraintIndex& c, pyb::object generated) {
            const auto prefixes = int_rows(generated, "generated");
            return copy_array(prefix_states(c, prefixes, prefixes.empty() ? 0 : prefixes.front().size()));
          },
          pyb::arg("generated"), "Each row's state after its prefix generated [n x t] (-1: dead), the walk mask_ does.")
      .def(
          "next_states",
          [](const PyConstraintIndex& c, pyb::object states, pyb::object tokens, int32_t step) {
            const std::vector<int64_t> st = int_vector(states, "states"), tok = int_vector(tokens, "tokens");
            TS_CHECK(st.size() == tok.size(), "states, tokens: " << st.size() << " and " << tok.size() << " entries");
            TS_CHECK(step >= 0 && step < c.set->length, "step: " << step << " outside [0, L = " << c.set->length << ")");
            std::vector<int64_t> out(st.size());
            for (size_t i = 0; i < st.size(); ++i)
              out[i] = st[i] == kDeadState || tok[i] < 0 || tok[i] >= c.set->vocab_size
                           ? kDeadState
                           : c.index->next_state(st[i], static_cast<int32_t>(tok[i]), step);
            return copy_array(out);
          },
          pyb::arg("states"), pyb::arg("tokens"), pyb::arg("step"),
          "The state after appending tokens[i] (the token of level `step`) to a prefix at states[i]; -1: dead.")
      .def(
          "mask_states_",
          [](PyConstraintIndex& c, pyb::object states, int32_t step, pyb::object scores) {
            TS_CHECK(step >= 0, "step: must be >= 0, got " << step);
            mask_at_states(c, int_vector(states, "states"), static_cast<size_t>(step), scores, "states");
          },
          pyb::arg("states"), pyb::arg("step"), pyb::arg("scores"),
          "mask_ for rows whose states are known (states [n], the level `step` = tokens generated so far).")
      .def(
          "csr",
          [](const PyConstraintIndex& c) {
            const TransitionMatrix& tm = *c.tm;
            TS_CHECK(tm.layout == CsrLayout::stacked, "csr: only the stacked layout exposes (token, next) edges");
            pyb::dict d;
            d["row_ptr"] = copy_array(tm.row_ptr);
            d["edges"] = copy_array(tm.edges).reshape({static_cast<pyb::ssize_t>(tm.edges.size() / 2), pyb::ssize_t{2}});
            d["max_branch"] = copy_array(tm.max_branch);
            d["level_start"] = copy_array(tm.level_start);
            return d;
          },
          "The stacked CSR arrays (row_ptr, edges [E x 2] of (token, next state), max_branch B_t, level_start): "
          "what a PyTorch rendering of Alg. 2 reads.");
}

// triescope.StaticDecoder.
void bind_static_decoder(pyb::module_& m) {
  pyb::class_<PyStaticDecoder>(m, "StaticDecoder", R"doc(STATIC's whole constrained beam-search step (Alg. 1 phases 1-4) on an index.

StaticDecoder(index)

step(logits, states, beam_scores, groups, k, step) takes the step's logits
float32 [n x vocab_size] (numpy or a CPU tensor), each beam's state int64 [n]
(root_state for an empty prefix, -1 for a dead beam) and score float64 [n],
the n rows split into `groups` equal groups (queries), and returns the best k
continuations per group as a dict of [groups x k] arrays: "tokens", "parents"
(the row in [0, n) each extends), "scores" (beam score + log-probability),
"next_states", and "count" [groups] (fewer than k when the set allows fewer;
past count tokens/parents/next_states are -1). The step t picks the level:
the dense levels below index.dense_levels, CSR slices after. The C++ step
triescope's own decoder runs (core/constraint/static_step.h). One decoder may be
stepped from several threads: the steps take turns on its workspace (the GIL
is released meanwhile) and each call gets its own result.)doc")
      .def(pyb::init([](const PyConstraintIndex& c) { return std::make_unique<PyStaticDecoder>(c.tm); }), pyb::arg("index"))
      .def_property_readonly("root_state", [](const PyStaticDecoder&) { return int64_t{0}; }, "The state of the empty prefix.")
      .def("step", &static_decoder_step, pyb::arg("logits"), pyb::arg("states"), pyb::arg("beam_scores"), pyb::arg("groups"), pyb::arg("k"),
           pyb::arg("step"), "One step: the best k (token, parent row, score, next state) per group; see the class.");
}

}  // namespace

void bind_constraint(pyb::module_& m) {
  bind_constraint_index(m);
  bind_static_decoder(m);
}

}  // namespace triescope::py
