#include "gui/chosen_beams_model.h"

#include "gui/step_colors.h"

namespace triescope::gui {

void ChosenBeamsModel::setStep(const StepView& v, const TraceReplay* replay) {
  beginResetModel();
  rows_.clear();
  if (v.chosen.is_array())
    for (const auto& c : v.chosen) {
      if (!c.is_object()) continue;
      Row r;
      r.beam = c.value("beam", c.value("sample", -1));  // MultiGen names its rows samples
      r.from = c.value("from_beam", -1);
      r.node = c.value("node", -1);
      r.token = c.value("token", -1);
      r.score = c.contains("score") && c["score"].is_number() ? c["score"].get<double>() : 0.0;
      r.text = replay ? token_label(*replay, r.token, 24) : QString::number(r.token);
      rows_.push_back(r);
    }
  endResetModel();
}

int ChosenBeamsModel::rowCount(const QModelIndex& parent) const { return parent.isValid() ? 0 : static_cast<int>(rows_.size()); }
int ChosenBeamsModel::columnCount(const QModelIndex& parent) const { return parent.isValid() ? 0 : ColCount; }

QVariant ChosenBeamsModel::data(const QModelIndex& index, int role) const {
  if (!index.isValid() || index.row() >= static_cast<int>(rows_.size())) return {};
  const Row& r = rows_[static_cast<size_t>(index.row())];
  if (role == NodeIdRole) return r.node;
  if (role == ScoreRole) return r.score;
  if (role == Qt::TextAlignmentRole) return index.column() == ColToken ? QVariant() : QVariant(int(Qt::AlignRight | Qt::AlignVCenter));
  if (role != Qt::DisplayRole) return {};
  switch (index.column()) {
    // -1 = not recorded by this algorithm: show nothing rather than "-1".
    case ColBeam: return r.beam >= 0 ? QVariant(r.beam) : QVariant(QStringLiteral("-"));
    case ColFrom: return r.from >= 0 ? QVariant(r.from) : QVariant(QStringLiteral("-"));
    case ColNode: return r.node >= 0 ? QVariant(r.node) : QVariant(QStringLiteral("-"));
    case ColToken: return r.text;
    case ColScore: return QString::number(r.score, 'f', 4);
  }
  return {};
}

QVariant ChosenBeamsModel::headerData(int section, Qt::Orientation o, int role) const {
  if (o != Qt::Horizontal || role != Qt::DisplayRole) return {};
  static const char* names[] = {"beam", "from beam", "node", "token", "score"};
  return section >= 0 && section < ColCount ? QString::fromLatin1(names[section]) : QVariant();
}

int ChosenBeamsModel::rowOfNode(int node) const {
  for (size_t i = 0; i < rows_.size(); ++i)
    if (rows_[i].node == node) return static_cast<int>(i);
  return -1;
}

}  // namespace triescope::gui
