// Every item model of the GUI under QAbstractItemModelTester.
#include <catch2/catch.hpp>

#include <QAbstractItemModelTester>

#include "gui/chosen_beams_model.h"
#include "gui/json_tree_model.h"
#include "gui/trace_document.h"

using namespace triescope;
using namespace triescope::gui;

namespace {
TraceDocumentPtr fig1() {
  static TraceDocumentPtr d = trace_document_run_sample(TRIESCOPE_SOURCE_DIR "/samples/figure1_once_upon_a_time.json");
  return d;
}
}  // namespace

TEST_CASE("JsonTreeModel passes QAbstractItemModelTester", "[gui][model]") {
  JsonTreeModel m;
  QAbstractItemModelTester tester(&m, QAbstractItemModelTester::FailureReportingMode::Fatal);
  json big = json::array();
  for (int i = 0; i < JsonTreeModel::kMaxChildren + 10; ++i) big.push_back({{"i", i}});
  const json j = {{"beams", json::array({{{"state", 3}, {"valid", 17}, {"path", "dense"}}, {{"state", 9}, {"valid", 2}, {"path", "sparse"}}})},
                  {"csr", {{"indptr", {0, 2, 5}}, {"indices", {1, 2, 3, 4, 5}}}},
                  {"big", big},
                  {"flag", true}};
  m.setJson(j);
  REQUIRE(m.rowCount() == 4);
  // Keys in nlohmann's sorted order; the path role names the JSON field.
  const QModelIndex beams = m.index(0, 0);
  CHECK(m.data(beams, Qt::DisplayRole).toString() == "beams");
  REQUIRE(m.rowCount(beams) == 2);
  const QModelIndex b1 = m.index(1, 0, beams);
  CHECK(m.data(b1, JsonTreeModel::PathRole).toString() == "beams[1]");
  const QModelIndex valid = m.index(2, 1, b1);
  CHECK(m.data(valid, Qt::DisplayRole).toString() == "2");
  CHECK(m.data(m.index(2, 0, b1), JsonTreeModel::PathRole).toString() == "beams[1].valid");
  const QModelIndex bigI = m.index(0, 0);
  (void)bigI;
  CHECK(m.rowCount(m.index(1, 0)) == JsonTreeModel::kMaxChildren + 1);  // "big": capped plus a "..." row
  m.setJson(json());
  CHECK(m.rowCount() == 0);
  m.setJson(j["csr"]);
  CHECK(m.rowCount() == 2);
}

TEST_CASE("ChosenBeamsModel passes QAbstractItemModelTester on a real trace", "[gui][model]") {
  ChosenBeamsModel m;
  QAbstractItemModelTester tester(&m, QAbstractItemModelTester::FailureReportingMode::Fatal);
  const auto doc = fig1();
  for (int32_t s : doc->replay->steps()) {
    CAPTURE(s);
    const StepView v = doc->replay->at(s);
    m.setStep(v, doc->replay.get());
    CHECK(m.rowCount() == static_cast<int>(v.chosen.is_array() ? v.chosen.size() : 0));
    for (int r = 0; r < m.rowCount(); ++r) {
      const int node = m.data(m.index(r, 0), ChosenBeamsModel::NodeIdRole).toInt();
      CHECK(node == v.chosen[static_cast<size_t>(r)]["node"].get<int>());
      CHECK(m.rowOfNode(node) == r);
      const int tok = v.nodes[static_cast<size_t>(node)].token;
      CHECK(m.data(m.index(r, ChosenBeamsModel::ColToken), Qt::DisplayRole).toString().toStdString() == doc->replay->token_text(tok));
    }
  }
}
