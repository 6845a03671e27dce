// Table of the beams chosen at a step (the step record's "chosen" array):
// beam, the beam it extends, node, token and cumulative score.
#pragma once
#include <QAbstractTableModel>

#include <vector>

#include "core/trace/trace_replay.h"

namespace triescope::gui {

class ChosenBeamsModel final : public QAbstractTableModel {
  Q_OBJECT
 public:
  enum Roles { NodeIdRole = Qt::UserRole + 1, ScoreRole };
  enum Columns { ColBeam, ColFrom, ColNode, ColToken, ColScore, ColCount };

  explicit ChosenBeamsModel(QObject* parent = nullptr) : QAbstractTableModel(parent) {}
  // `replay` gives token strings; may be null.
  void setStep(const StepView& v, const TraceReplay* replay);

  int rowCount(const QModelIndex& parent = {}) const override;
  int columnCount(const QModelIndex& parent = {}) const override;
  QVariant data(const QModelIndex& index, int role) const override;
  QVariant headerData(int section, Qt::Orientation o, int role) const override;
  int rowOfNode(int node) const;

 private:
  struct Row {
    int beam = -1, from = -1, node = -1, token = -1;
    double score = 0;
    QString text;
  };
  std::vector<Row> rows_;
};

}  // namespace triescope::gui
