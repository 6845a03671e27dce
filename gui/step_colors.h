// Colours shared by every pane so a node looks the same in the trie, the
// mask axes and the KV grid; the legend text is generated from the same table.
#pragma once
#include <QColor>
#include <QString>

#include <vector>

#include "core/trace/trace_replay.h"

namespace triescope::gui {

QColor status_color(NodeStatus s);
QString status_text(NodeStatus s);

inline const QColor kMaskAllowed{33, 84, 170};      // attends
inline const QColor kMaskForbidden{240, 240, 243};  // masked out
inline const QColor kMaskGrid{200, 200, 208};
inline const QColor kSelection{0, 150, 255};   // selection (cyan blue), everywhere
inline const QColor kAddedOutline{235, 100, 0};  // added at this step (orange)
inline const QColor kDiffMark{220, 0, 140};
inline const QColor kCellHighlight{230, 170, 0};  // the mask cell pointed at: its tree path and slots (gold)
inline const QColor kRuleViolation{215, 20, 20};  // a mask cell or row `check` faults
inline const QColor kSharedBranch{150, 150, 160};
inline const QColor kFreeSlot{255, 255, 255};

// Branch of every node: -1 for nodes shared by two or more leaves (the prompt
// and common prefixes), else the id of the topmost node on its own branch.
std::vector<int32_t> node_branches(const StepView& v);
QColor branch_color(int32_t branch);

// Short token label: the vocabulary string (visible whitespace) or the id.
QString token_label(const TraceReplay& r, int32_t token, int max_chars = 14);
// token_label of node `node`'s token in `v`; `absent` where no node of `v` has that id.
QString node_token_label(const StepView& v, const TraceReplay& r, int32_t node, int max_chars, const QString& absent);

}  // namespace triescope::gui
