// The verification pane and the acceptance plots on real speculative traces
// (DSBD Figure 3, lookahead, speculative decoding) decoded in the test by
// core's run_sample; and every bundled sample that needs no LibTorch opened
// and stepped through in the main window.
#include <catch2/catch.hpp>

#include <cmath>

#include <QApplication>
#include <QChart>
#include <QDir>
#include <QTableWidget>
#include <QTest>
#include <QValueAxis>

#include <filesystem>
#include <set>
#include <sstream>

#include "core/config/json_reader.h"
#include "core/decode/run_sample.h"
#include "gui/main_window.h"
#include "tests/gui/shown_window.h"
#include "gui/panes/json_pane.h"
#include "gui/panes/mask_view.h"
#include "gui/panes/plots_pane.h"
#include "gui/panes/trie_view.h"
#include "gui/panes/verify_pane.h"
#include "core/analysis/verify_info.h"
#include "tests/core/sample_traces.h"
#include "core/trace/trace.h"

using namespace triescope;
using namespace triescope::gui;

namespace {
std::string sample_path(const char* name) { return std::string(TRIESCOPE_SOURCE_DIR "/samples/") + name; }

// Every series of the acceptance chart is drawn against one horizontal and one
// vertical axis, and an axis with integer labels ("%d") ticks at whole
// numbers only (no label repeated on a fractional tick); returns the vertical
// axis's range.
std::pair<double, double> acceptance_axes_check(const PlotsPane& plots) {
  QChart* chart = plots.acceptanceChart();
  REQUIRE(!chart->series().isEmpty());
  for (QAbstractSeries* s : chart->series()) {
    CHECK(chart->axes(Qt::Horizontal, s).size() == 1);
    CHECK(chart->axes(Qt::Vertical, s).size() == 1);
  }
  for (QAbstractAxis* a : chart->axes()) {
    const auto* v = qobject_cast<const QValueAxis*>(a);
    if (!v || v->labelFormat() != "%d") continue;
    CAPTURE(v->titleText().toStdString());
    CHECK(v->tickType() == QValueAxis::TicksDynamic);
    CHECK(v->tickInterval() >= 1.0);
    CHECK(v->tickInterval() == std::floor(v->tickInterval()));
  }
  const auto* y = qobject_cast<const QValueAxis*>(chart->axes(Qt::Vertical).value(0));
  REQUIRE(y);
  return {y->min(), y->max()};
}

TraceDocumentPtr decode(const std::string& path, const std::function<void(json&)>& edit = {}) {
  json j = json_load_file(path);
  if (edit) edit(j);
  Sample s = sample_parse(j, path);
  MemoryTraceSink sink;
  std::ostringstream os;
  run_sample(s, &sink, os);
  return trace_document_from_records(std::move(sink.records), path);
}

using Window = triescope::gui_tests::ShownWindow;

std::string text_of(const TraceDocument& d, int32_t token) { return d.replay->token_text(token); }

// Tokens of the chips of `layer` with decision `d`, sorted.
std::multiset<std::string> tokens(const TraceDocument& doc, const VerifyLayer& L, Decision d) {
  std::multiset<std::string> out;
  for (const VerifyChip& c : L.chips)
    if (c.decision == d) out.insert(text_of(doc, c.token));
  return out;
}
}  // namespace

TEST_CASE("verification pane: DSBD Figure 3, the iteration the paper draws", "[gui][verify]") {
  const TraceDocumentPtr doc = decode(sample_path("dsbd_figure3.json"));
  Window win;
  TraceContext& ctx = win.w.context();
  ctx.setTraces(doc);
  VerifyPane* pane = win.w.verifyPane();

  SECTION("verify step 4: layer 1 passes with W_L = 2, layer 2 stops; 'you' comes from the residual") {
    ctx.setStep(4);
    REQUIRE(ctx.view().phase == "verify");
    const VerifyInfo& I = pane->info();
    REQUIRE(I.error.empty());
    REQUIRE((I.kind == kVerifyDsbdLayers && !I.draft));
    CHECK(I.iteration == 2);
    CHECK(I.gamma == 2);
    CHECK(I.stopped_at_layer == 2);
    REQUIRE(I.layers.size() == 2);  // no extra layer: layer 2 was short
    // docs/dsbd.md, Figure 3 (the paper's Figure 2): layer 1 accepts "why is"
    // and "who are", W_L = 2 is reached and "why do" is rejected untested.
    const VerifyLayer& L1 = I.layers[0];
    CHECK(L1.verified);
    CHECK(L1.passed);
    CHECK(L1.width == 2);
    CHECK(L1.chips.size() == 3);  // W_S = 3 draft beams
    CHECK(tokens(*doc, L1, Decision::accepted) == std::multiset<std::string>{"is", "are"});
    CHECK(tokens(*doc, L1, Decision::untested) == std::multiset<std::string>{"do"});
    CHECK(L1.count(Decision::rejected) == 0);
    // Layer 2: all drafts stem from "who are"; "they" accepted, "it" rejected
    // (drawn twice: two beams, one node), "you" drawn from the residual p'.
    const VerifyLayer& L2 = I.layers[1];
    CHECK_FALSE(L2.passed);
    CHECK(L2.width == 2);
    CHECK(tokens(*doc, L2, Decision::accepted) == std::multiset<std::string>{"they"});
    CHECK(tokens(*doc, L2, Decision::rejected) == std::multiset<std::string>{"it", "it"});
    CHECK(tokens(*doc, L2, Decision::sampled_residual) == std::multiset<std::string>{"you"});
    for (const VerifyChip& c : L2.chips) {
      if (c.decision == Decision::accepted || c.decision == Decision::rejected) {
        // The probabilities are the record's: accepted iff u < accept prob
        // (min(1, p'/q); p' is the residual after a rejection, so not p/q).
        CHECK((c.u < c.accept_prob) == (c.decision == Decision::accepted));
        CHECK(c.accept_prob >= 0);
        CHECK(c.accept_prob <= 1);
      }
      // Every chip's node carries the status the replay gives it.
      const NodeStatus st = ctx.view().nodes[static_cast<size_t>(c.node)].status;
      if (c.decision == Decision::accepted) CHECK(st == NodeStatus::accepted);
      if (c.decision == Decision::rejected) CHECK(st == NodeStatus::rejected);
    }
    // The widgets show the same: 7 chips (3 + 3 drafts + 1 sampled), one
    // table row each, the stop named in the summary.
    pane->ensureUpToDate();
    CHECK(pane->canvas()->chips().size() == 7);
    CHECK(pane->table()->rowCount() == 7);
    CHECK(pane->summaryText().contains(QStringLiteral("stopped at layer 2")));
    CHECK(pane->summaryText().contains(QStringLiteral("3 accepted, 2 rejected, 1 untested")));
    // Clicking the residual chip selects its node everywhere.
    for (const auto& ch : pane->canvas()->chips())
      if (ch.c.decision == Decision::sampled_residual) {
        QTest::mouseClick(pane->canvas(), Qt::LeftButton, {}, ch.rect.center().toPoint());
        CHECK(ctx.selectedNode() == ch.c.node);
        CHECK(text_of(*doc, ctx.view().nodes[static_cast<size_t>(ctx.selectedNode())].token) == "you");
      }
  }

  SECTION("draft step 3: two layers of W_S = 3 draft beams, verified at step 4") {
    ctx.setStep(3);
    const VerifyInfo& I = pane->info();
    REQUIRE((I.kind == kVerifyDsbdLayers && I.draft));
    CHECK(I.verify_step == 4);
    REQUIRE(I.layers.size() == 2);
    CHECK(I.layers[0].chips.size() == 3);
    CHECK(I.layers[1].chips.size() == 3);
    CHECK(I.total(Decision::drafted) == 6);
    for (const auto& L : I.layers)
      for (const auto& c : L.chips) CHECK(c.q > 0);
  }

  SECTION("a step without verification says so") {
    ctx.setStep(0);
    CHECK_FALSE(pane->hasData());
    pane->ensureUpToDate();
    CHECK(pane->summaryText().contains(QStringLiteral("no verification record")));
  }
}

TEST_CASE("verification pane: DSBD synthetic, every verify step agrees with its record", "[gui][verify]") {
  const TraceDocumentPtr doc = decode(sample_path("dsbd_synthetic.json"));
  int verify_steps = 0, stopped = 0, extra = 0;
  for (const json& r : doc->replay->records()) {
    if (r.value("kind", "") != "step" || r.value("phase", "") != "verify") continue;
    ++verify_steps;
    const StepView v = doc->replay->at(r["step"].get<int32_t>());
    const VerifyInfo I = verify_info(v, *doc->replay);
    CAPTURE(v.step);
    REQUIRE(I.error.empty());
    REQUIRE((I.kind == kVerifyDsbdLayers && !I.draft));
    const json& ver = r["verify"];
    int acc = 0, rej = 0, tested = 0;
    for (const json& L : ver["layers"])
      for (const json& d : L["drafts"]) {
        ++tested;
        (d["accepted"].get<bool>() ? acc : rej) += 1;
      }
    CHECK(I.total(Decision::accepted) == acc);
    CHECK(I.total(Decision::rejected) == rej);
    // Every draft beam of the iteration is shown exactly once: the draft
    // record's beams per layer.
    const StepView dv = doc->replay->at(v.step - 1);
    int drafted = 0;
    for (const json& L : dv.extra["draft_layers"]) drafted += static_cast<int>(L["beams"].size());
    CHECK(I.total(Decision::accepted) + I.total(Decision::rejected) + I.total(Decision::untested) + I.total(Decision::parent_rejected) +
              I.total(Decision::not_verified) ==
          drafted);
    if (ver["stopped_at_layer"].is_null()) {
      ++extra;
      REQUIRE(!I.layers.empty());
      CHECK(I.layers.back().extra);
      CHECK(I.stopped_at_layer == 0);
    } else {
      ++stopped;
      CHECK(I.stopped_at_layer == ver["stopped_at_layer"].get<int>());
      // Layers after the stop were not verified.
      for (const auto& L : I.layers)
        if (L.layer > I.stopped_at_layer) CHECK((!L.verified && L.count(Decision::not_verified) == static_cast<int>(L.chips.size())));
    }
  }
  CHECK(verify_steps > 3);
  CHECK(stopped > 0);  // the sample exercises both endings
  CHECK(extra > 0);
  // The acceptance plot: per-layer figures over the whole trace.
  Window win;
  win.w.context().setTraces(doc);
  PlotsPane* plots = win.w.plotsPane();
  REQUIRE(plots->hasAcceptance());
  REQUIRE(plots->acceptance().has_layers());
  int verified1 = 0;
  for (const json& r : doc->replay->records())
    if (r.value("phase", "") == "verify" && !r["verify"]["layers"].empty()) ++verified1;
  CHECK(plots->acceptance().layers[0].verified == verified1);
  CHECK(plots->tabs()->isTabEnabled(1));
  const auto [lo, hi] = acceptance_axes_check(*plots);
  CHECK(lo == 0);
  CHECK(hi >= 1);  // fractions of a layer's tests
}

TEST_CASE("verification pane: lookahead, window vs candidate nodes and the accepted path", "[gui][verify]") {
  for (const char* mode : {"trie", "independent"}) {
    CAPTURE(mode);
    const TraceDocumentPtr doc = decode(sample_path("lookahead_repetitive.json"), [&](json& j) {
      j["lookahead"]["verify"] = mode;
      j["lookahead"]["max_new_tokens"] = 64;
    });
    const int32_t W = doc->replay->header()["config"]["window"].get<int32_t>();
    int with_accepts = 0, steps = 0;
    for (int32_t s : doc->replay->steps()) {
      const StepView v = doc->replay->at(s);
      if (v.phase != "verify") continue;
      ++steps;
      const VerifyInfo I = verify_info(v, *doc->replay);
      CAPTURE(s);
      REQUIRE(I.error.empty());
      REQUIRE(I.kind == kVerifyLookahead);
      CHECK(static_cast<int32_t>(I.window_nodes.size()) == W);
      CHECK(I.accepted_tokens.size() == I.accepted_nodes.size() + 1);
      REQUIRE(I.pending_node >= 0);
      CHECK(v.nodes[static_cast<size_t>(I.pending_node)].status == NodeStatus::accepted);
      for (int32_t n : I.window_nodes) CHECK(v.nodes[static_cast<size_t>(n)].status == NodeStatus::rejected);
      for (int32_t n : I.accepted_nodes) CHECK(v.nodes[static_cast<size_t>(n)].status == NodeStatus::accepted);
      // Each candidate token maps to a computed node with that token, whose
      // parent is the previous token's node (or the pending token).
      std::set<int32_t> used;
      size_t longest = 0;
      for (const auto& c : I.candidates) {
        for (size_t i = 0; i < c.tokens.size(); ++i) {
          if (c.nodes[i] < 0) {
            CHECK(std::string(mode) == "trie");  // only the trie cuts (D, B)
            continue;
          }
          const TreeNode& nd = v.nodes[static_cast<size_t>(c.nodes[i])];
          CHECK(nd.token == c.tokens[i]);
          CHECK(nd.parent == (i == 0 ? I.pending_node : c.nodes[i - 1]));
          used.insert(c.nodes[i]);
        }
        longest = std::max(longest, static_cast<size_t>(c.matched));
      }
      // Every computed candidate node belongs to some candidate; the accepted
      // path is the longest matched prefix.
      CHECK(used == std::set<int32_t>(I.candidate_nodes.begin(), I.candidate_nodes.end()));
      CHECK(longest == I.accepted_nodes.size());
      if (std::string(mode) == "independent") CHECK(I.candidate_tokens() == static_cast<int32_t>(I.candidate_nodes.size()));
      else CHECK(I.candidate_tokens() >= static_cast<int32_t>(I.candidate_nodes.size()));
      with_accepts += !I.accepted_nodes.empty();
    }
    CHECK(steps > 5);
    CHECK(with_accepts > 0);
    // The pane at the first step with accepted candidate tokens.
    Window win;
    TraceContext& ctx = win.w.context();
    ctx.setTraces(doc);
    for (int32_t s : doc->replay->steps()) {
      ctx.setStep(s);
      if (!win.w.verifyPane()->info().accepted_nodes.empty()) break;
    }
    VerifyPane* pane = win.w.verifyPane();
    const VerifyInfo& I = pane->info();
    REQUIRE(!I.accepted_nodes.empty());
    pane->ensureUpToDate();
    size_t cand_tokens = 0;
    for (const auto& c : I.candidates) cand_tokens += c.tokens.size();
    // pending + window + every candidate token + the accepted path (+ greedy).
    CHECK(pane->canvas()->chips().size() == 1 + I.window_nodes.size() + cand_tokens + I.accepted_tokens.size());
    CHECK(pane->summaryText().contains(QStringLiteral("%1</b> candidate node(s) computed").arg(I.candidate_nodes.size())));
    // Acceptance plot: tokens per pass, one point per verify step.
    CHECK(win.w.plotsPane()->acceptance().per_step.size() == static_cast<size_t>(steps));
    CHECK_FALSE(win.w.plotsPane()->acceptance().has_layers());
    const auto [lo, hi] = acceptance_axes_check(*win.w.plotsPane());
    CHECK(lo == 0);
    for (const auto& [step, tokens] : win.w.plotsPane()->acceptance().per_step) CHECK(tokens < hi);  // every pass's count in view
  }
}

TEST_CASE("verification pane: speculative decoding draft chain", "[gui][verify]") {
  const TraceDocumentPtr doc = decode(sample_path("speculative_synthetic.json"));
  int rejected_iters = 0, full_iters = 0;
  for (const json& r : doc->replay->records()) {
    if (r.value("phase", "") != "verify") continue;
    const StepView v = doc->replay->at(r["step"].get<int32_t>());
    const VerifyInfo I = verify_info(v, *doc->replay);
    CAPTURE(v.step);
    REQUIRE(I.error.empty());
    REQUIRE((I.kind == kVerifySpeculativeChain && !I.draft));
    const int accepted = r["verify"]["accepted"].get<int>();
    CHECK(I.total(Decision::accepted) == accepted);
    CHECK(I.steps == accepted + 1);
    if (accepted < I.gamma) {
      ++rejected_iters;
      CHECK(I.stopped_at_layer == accepted + 1);
      CHECK(I.total(Decision::rejected) == 1);
      CHECK(I.total(Decision::untested) == I.gamma - accepted - 1);
      CHECK(I.total(Decision::sampled_residual) == 1);
    } else {
      ++full_iters;
      CHECK(I.layers.back().extra);
      CHECK(I.total(Decision::sampled_target) == 1);
    }
  }
  CHECK(rejected_iters + full_iters > 2);
}

TEST_CASE("every bundled sample that needs no LibTorch opens and steps in the GUI", "[gui][samples]") {
  std::vector<std::string> paths;
  for (const auto& e : std::filesystem::directory_iterator(TRIESCOPE_SOURCE_DIR "/samples"))
    if (e.path().extension() == ".json") paths.push_back(e.path().string());
  std::sort(paths.begin(), paths.end());
  Window win;
  TraceContext& ctx = win.w.context();
  QStringList errors;
  QObject::connect(&ctx, &TraceContext::errorOccurred, [&](const QString& m) { errors << m; });
  int opened = 0;
  std::set<std::string> algorithms;
  for (const std::string& p : paths) {
    const json j = json_load_file(p);
    if (triescope::testing::sample_needs_optional_model(j)) continue;  // its model is not linked here
    CAPTURE(p);
    const TraceDocumentPtr doc = decode(p);
    ctx.setTraces(doc);
    REQUIRE(errors.isEmpty());
    REQUIRE(!ctx.steps().empty());
    ++opened;
    algorithms.insert(doc->algorithm());
    const size_t n = ctx.steps().size();
    for (size_t i = 0; i < n; ++i) {
      ctx.setStepIndex(static_cast<int32_t>(i));
      const StepView& v = ctx.view();
      CAPTURE(v.step, v.phase);
      REQUIRE(errors.isEmpty());
      REQUIRE(v.step == ctx.steps()[i]);
      // Something to look at: a tree, its boxes, and the recorded mask.
      CHECK(!v.nodes.empty());
      CHECK(win.w.trieView()->shownNodeCount() > 0);
      // The mask pane labels column c with ctx.nodeInForwardSlot(c) and warns
      // when a recorded bit disagrees with the tree's ancestry: no warning
      // may appear on a real trace (lookahead compacts after its pass, so its
      // columns are the pre-gc layout).
      if (v.forward && !v.forward->queries.empty()) {
        const ForwardView& f = *v.forward;
        int bad = 0;
        for (int r = 0; r < f.mask.rows; ++r) {
          CHECK(ctx.nodeInForwardSlot(f.slots[static_cast<size_t>(r)]) == f.queries[static_cast<size_t>(r)]);
          std::vector<char> anc(v.nodes.size(), 0);
          for (int32_t a = f.queries[static_cast<size_t>(r)]; a >= 0; a = v.nodes[static_cast<size_t>(a)].parent) anc[static_cast<size_t>(a)] = 1;
          for (int c = 0; c < f.mask.cols; ++c) {
            const int32_t k = ctx.nodeInForwardSlot(c);
            if (k >= 0 && (anc[static_cast<size_t>(k)] != 0) != f.mask.test(r, c)) ++bad;
          }
        }
        CHECK(bad == 0);
      }
      // Speculative steps are explained; the record parses.
      const bool spec = v.phase == "verify" || v.phase == "draft";
      if (spec && (v.extra.contains("verify") || v.phase == "draft")) {
        CHECK(win.w.verifyPane()->hasData());
        CHECK(win.w.verifyPane()->info().error.empty());
      }
      if (v.extra.contains("constraint")) CHECK(win.w.constraintPane()->hasData());
      // Paint now and then (all panes, this step): must not throw or assert.
      if (i == 0 || i + 1 == n || i % 64 == 0) QApplication::processEvents();
    }
    CHECK(win.w.statusText().contains(QStringLiteral("step %1").arg(ctx.steps().back())));
  }
  CHECK(opened >= 10);
  CHECK(algorithms.count("dsbd"));
  CHECK(algorithms.count("lookahead"));
  CHECK(algorithms.count("multigen"));
}
