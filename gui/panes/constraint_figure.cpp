#include "gui/panes/constraint_figure.h"

#include <QFontMetricsF>
#include <QPainter>

#include <algorithm>
#include <bit>
#include <cmath>
#include <functional>
#include <iterator>

#include "gui/step_colors.h"

namespace triescope::gui {

namespace {
constexpr double kMargin = 8;
constexpr double kBoxW = 72, kBoxH = 38, kSlotW = 84;
constexpr double kBadgeW = 22, kBadgeH = 14;
constexpr int kBadgesPerRow = 3;
constexpr int kMaxGridRows = 16;  // 16 x 64 bits of a dense row drawn; the rest counted
const QColor kInk{30, 30, 30};
const QColor kMuted{110, 110, 120};
const QColor kProblem{190, 30, 30};

// The paper's node names (Figure 1b): the level as a letter, then the token.
QString node_name(int32_t level, int32_t token) {
  const QString lv = level >= 1 && level <= 26 ? QString(QChar('A' + level - 1)) : QStringLiteral("L%1:").arg(level);
  return lv + QString::number(token);
}

QString tokens_text(const ConstraintBeam& b) {
  if (b.level < 0) return QStringLiteral("?");
  if (b.prefix.empty()) return QStringLiteral("() root");
  QStringList t;
  for (int32_t x : b.prefix) t << (x < 0 ? QStringLiteral("?") : QString::number(x));
  return QStringLiteral("(") + t.join(QLatin1Char(' ')) + QStringLiteral(")");
}

QString row_text(const ConstraintBeam& b) {
  if (b.indexed) return QStringLiteral("%1, %2").arg(b.row_begin).arg(b.row_end);
  if (b.recorded_row_begin >= 0) return QStringLiteral("%1, %2").arg(b.recorded_row_begin).arg(b.recorded_row_end);
  return QStringLiteral("-");
}

QString next_text(const ConstraintBeam& b, int32_t length) {
  if (!b.indexed) return b.valid >= 0 ? QStringLiteral("%1 allowed (set not loaded)").arg(b.valid) : QStringLiteral("not known (set not loaded)");
  if (b.level >= length) return QStringLiteral("complete id of C (leaf)");
  QStringList parts;
  for (const auto& e : b.row) parts << QStringLiteral("%1→#%2 (%3)").arg(e.token).arg(e.next).arg(e.items);
  const int64_t n = b.row_end - b.row_begin;
  QString s = parts.join(QStringLiteral(", "));
  if (n > static_cast<int64_t>(b.row.size())) s += QStringLiteral(", … %1 in all").arg(n);
  return s;
}

QString kept_text(const ConstraintBeam& b) {
  if (b.kept.empty()) return QStringLiteral("none kept");
  QStringList parts;
  for (const auto& [tok, score] : b.kept) parts << QStringLiteral("%1 (%2)").arg(tok).arg(score, 0, 'f', 2);
  return parts.join(QStringLiteral(", "));
}
}  // namespace

QColor constraint_beam_color(int32_t beam) {
  static const QColor palette[] = {{31, 119, 180}, {214, 39, 40},  {44, 160, 44},  {148, 103, 189},
                                   {255, 127, 14}, {23, 190, 207}, {140, 86, 75},  {227, 119, 194},
                                   {127, 127, 127}, {188, 189, 34}};
  return palette[static_cast<size_t>(std::max(0, beam)) % std::size(palette)];
}

ConstraintFigure::ConstraintFigure() {
  font_ = QFont(QStringLiteral("DejaVu Sans"), 9);
  bold_ = font_;
  bold_.setBold(true);
  lineH_ = std::ceil(QFontMetricsF(font_).height()) + 4;
}

void ConstraintFigure::addText(QRectF r, QString s, int flags, bool bold, QColor c) {
  const QFontMetricsF fm(bold ? bold_ : font_);
  if (!(flags & Qt::TextWordWrap)) s = fm.elidedText(s, Qt::ElideRight, r.width());
  texts_.push_back({r, std::move(s), flags | Qt::AlignVCenter, bold, c});
}

double ConstraintFigure::tableRow(double y, const std::vector<double>& widths, const QStringList& cells, bool bold) {
  double x = kMargin;
  for (size_t i = 0; i < widths.size() && i < static_cast<size_t>(cells.size()); ++i) {
    addText(QRectF(x + 2, y, widths[i] - 4, lineH_), cells[static_cast<int>(i)], Qt::AlignLeft, bold, bold ? kMuted : kInk);
    x += widths[i];
  }
  size_.setWidth(std::max(size_.width(), x + kMargin));
  return y + lineH_;
}

void ConstraintFigure::set(ConstraintPicture picture, QStringList lines) {
  pic_ = std::move(picture);
  lines_ = std::move(lines);
  texts_.clear();
  boxes_.clear();
  more_.clear();
  hits_.clear();
  badges_.clear();
  grids_.clear();
  size_ = QSizeF(420, 0);
  double y = kMargin;
  const double textW = 760;
  for (const QString& l : lines_) {
    const bool problem = l.contains(QStringLiteral("not found")) || l.contains(QStringLiteral("sha256 is")) ||
                         l.contains(QStringLiteral("disagree"));
    addText(QRectF(kMargin, y, textW, lineH_), l, Qt::AlignLeft, false, problem ? kProblem : kInk);
    y += lineH_;
  }
  for (const std::string& pr : pic_.problems) {
    addText(QRectF(kMargin, y, textW, lineH_), QString::fromStdString(pr), Qt::AlignLeft, false, kProblem);
    y += lineH_;
  }
  size_.setWidth(std::max(size_.width(), textW + 2 * kMargin));
  if (!pic_.has_record && pic_.after.empty()) {
    size_.setHeight(y + kMargin);
    return;
  }
  layoutTree(y);
  layoutMaskedTable(y);
  layoutDenseTables(y);
  layoutAfterTable(y);
  // What a step record holds: the chosen tokens and their scores, never the
  // model's log-probs of the tokens the constraint removed.
  addText(QRectF(kMargin, y + 4, textW, lineH_ * 2),
          QStringLiteral("\"kept\" = the tokens the search chose from the beam, with their scores (what the model preferred among "
                         "the allowed tokens). The model's scores of the other tokens, allowed or not, are not recorded in the trace."),
          Qt::AlignLeft | Qt::TextWordWrap, false, kMuted);
  size_.setHeight(y + 2 * lineH_ + 8 + kMargin);
}

void ConstraintFigure::layoutTree(double& y) {
  const auto& tree = pic_.tree;
  addText(QRectF(kMargin, y, 760, lineH_),
          pic_.whole_tree ? QStringLiteral("Prefix tree of C (the whole set): node = level letter + token, #state, ids below")
          : pic_.indexed  ? QStringLiteral("Prefix tree of C near the beams: node = level letter + token, #state, ids below; "
                                           "+N = children not drawn")
                          : QStringLiteral("Beams' prefixes (set not loaded: states as recorded, no counts)"),
          Qt::AlignLeft, true, kMuted);
  y += lineH_;
  const double legendY = y;
  y += lineH_;
  std::vector<std::vector<int32_t>> kids(tree.size());
  for (size_t i = 1; i < tree.size(); ++i) kids[static_cast<size_t>(tree[i].parent)].push_back(static_cast<int32_t>(i));
  for (auto& k : kids)
    std::sort(k.begin(), k.end(), [&](int32_t a, int32_t b) { return tree[static_cast<size_t>(a)].token < tree[static_cast<size_t>(b)].token; });
  int badgeRows = 1;
  for (const auto& n : tree)
    badgeRows = std::max<int>(badgeRows, static_cast<int>((n.masked_beams.size() + n.after_beams.size() + kBadgesPerRow - 1) / kBadgesPerRow));
  const double levelH = kBoxH + 8 + badgeRows * (kBadgeH + 2);
  // Tidy placement: leaves (and "+N" boxes) take consecutive slots, a parent sits over its children.
  std::vector<double> cx(tree.size(), 0);
  double slot = 0;
  std::function<void(int32_t)> place = [&](int32_t i) {
    const auto& k = kids[static_cast<size_t>(i)];
    // "+N more" where the drawing stops part-way through a row: under a beam's
    // state or a partly drawn node (a node's own count is in its box).
    const auto& tn = tree[static_cast<size_t>(i)];
    const int64_t hidden = (!k.empty() || !tn.masked_beams.empty() || tn.parent < 0) ? tn.hidden_children : 0;
    if (k.empty() && hidden <= 0) {
      cx[static_cast<size_t>(i)] = slot++;
      return;
    }
    for (int32_t c : k) place(c);
    double lo = k.empty() ? slot : cx[static_cast<size_t>(k.front())], hi = k.empty() ? slot : cx[static_cast<size_t>(k.back())];
    if (hidden > 0) {
      const double x = kMargin + slot * kSlotW + (kSlotW - kBoxW) / 2;
      const double yy = y + (tree[static_cast<size_t>(i)].level + 1) * levelH;
      more_.push_back({QRectF(x, yy, kBoxW, kBoxH * 0.7), i});
      addText(more_.back().first, QStringLiteral("+%1 more").arg(hidden), Qt::AlignHCenter, false, kMuted);
      hi = slot++;
    }
    cx[static_cast<size_t>(i)] = (lo + hi) / 2;
  };
  if (!tree.empty()) place(0);
  boxes_.resize(tree.size());
  for (size_t i = 0; i < tree.size(); ++i) {
    const auto& n = tree[i];
    const QRectF r(kMargin + cx[i] * kSlotW + (kSlotW - kBoxW) / 2, y + n.level * levelH, kBoxW, kBoxH);
    boxes_[i] = r;
    const QString name = n.parent < 0 ? QStringLiteral("root") : node_name(n.level, n.token);
    const QString state = n.state >= 0 ? QStringLiteral("#%1").arg(n.state) : QStringLiteral("#?");
    addText(QRectF(r.left(), r.top() + 1, r.width(), r.height() / 2), name + QStringLiteral("  ") + state, Qt::AlignHCenter, true, kInk);
    if (n.items >= 0)
      addText(QRectF(r.left(), r.center().y(), r.width(), r.height() / 2 - 1), QStringLiteral("%1 id%2").arg(n.items).arg(n.items == 1 ? "" : "s"),
              Qt::AlignHCenter, false, kMuted);
    int k = 0;
    auto badge = [&](int32_t beam, bool after) {
      const double bx = r.left() + (k % kBadgesPerRow) * (kBadgeW + 3), by = r.bottom() + 3 + (k / kBadgesPerRow) * (kBadgeH + 2);
      ++k;
      int32_t node = -1;
      for (const auto& b : after ? pic_.after : pic_.masked)
        if (b.beam == beam) node = b.node;
      badges_.push_back({QRectF(bx, by, kBadgeW, kBadgeH), beam, after, node});
      hits_.push_back({badges_.back().rect, node});
    };
    for (int32_t b : n.masked_beams) badge(b, false);
    for (int32_t b : n.after_beams) badge(b, true);
  }
  double depth = 0;
  for (const auto& n : tree) depth = std::max<double>(depth, n.level);
  for (const auto& m : more_) depth = std::max<double>(depth, tree[static_cast<size_t>(m.second)].level + 1);
  size_.setWidth(std::max(size_.width(), 2 * kMargin + slot * kSlotW));
  addText(QRectF(kMargin + 2 * kBadgeW + 8, legendY, 700, lineH_),
          QStringLiteral("filled bN: beam N's state when this step masked it;  outlined: its state after the step (click: select its node)"),
          Qt::AlignLeft, false, kMuted);
  badges_.push_back({QRectF(kMargin, legendY + 2, kBadgeW, kBadgeH), 0, false, -1});
  badges_.push_back({QRectF(kMargin + kBadgeW + 4, legendY + 2, kBadgeW, kBadgeH), 0, true, -1});
  y += (depth + 1) * levelH + 4;
}

void ConstraintFigure::layoutMaskedTable(double& y) {
  if (!pic_.has_record) {
    addText(QRectF(kMargin, y, 760, lineH_), QStringLiteral("This step masked no beam (no \"constraint\" record): the beams after the previous step are below."),
            Qt::AlignLeft, false, kMuted);
    y += lineH_ + 4;
    return;
  }
  addText(QRectF(kMargin, y, 760, lineH_), QStringLiteral("CSR rows read at this step (Fig. 1e: row_start = P[s], row_end = P[s + 1], C and V of the row)"),
          Qt::AlignLeft, true, kMuted);
  y += lineH_;
  const std::vector<double> w = {44, 92, 56, 52, 86, 34, 40, 250, 130};
  y = tableRow(y, w, {QStringLiteral("beam"), QStringLiteral("tokens"), QStringLiteral("state s"), QStringLiteral("path"),
                      QStringLiteral("P[s], P[s+1]"), QStringLiteral("B_t"), QStringLiteral("valid"),
                      QStringLiteral("allowed next: token→#state (ids)"), QStringLiteral("kept (score)")},
               true);
  for (const ConstraintBeam& b : pic_.masked) {
    const QString state = b.state >= 0 ? QStringLiteral("#%1").arg(b.state) : QStringLiteral("?");
    hits_.push_back({QRectF(kMargin, y, w[0], lineH_), b.node});
    const double rowY = y;
    y = tableRow(y, w, {QStringLiteral("b%1").arg(b.beam), tokens_text(b), state, QString::fromStdString(b.path), row_text(b),
                        b.slice >= 0 ? QString::number(b.slice) : QStringLiteral("-"), b.valid >= 0 ? QString::number(b.valid) : QStringLiteral("-"),
                        next_text(b, pic_.length), kept_text(b)},
                 false);
    texts_[texts_.size() - 9].color = constraint_beam_color(b.beam);
    (void)rowY;
  }
  y += 6;
}

void ConstraintFigure::layoutDenseTables(double& y) {
  if (pic_.dense_levels <= 0) return;
  bool any = false;
  for (const ConstraintBeam& b : pic_.masked) any = any || (b.recorded && b.path == "dense");
  if (!any) return;
  addText(QRectF(kMargin, y, 760, lineH_),
          QStringLiteral("Dense levels (d = %1): the bit row of D each beam read, 64 tokens a line, LSB first "
                         "(blue = allowed, orange frame = kept)").arg(pic_.dense_levels),
          Qt::AlignLeft, true, kMuted);
  y += lineH_;
  const int words = pic_.words_per_row;
  gridRows_ = std::min(words, kMaxGridRows);
  for (const ConstraintBeam& b : pic_.masked) {
    if (!(b.recorded && b.path == "dense")) continue;
    if (b.dense_bits.empty()) {
      addText(QRectF(kMargin, y, 760, lineH_), QStringLiteral("b%1: bit row not shown (set not loaded); %2 tokens allowed as recorded").arg(b.beam).arg(b.valid),
              Qt::AlignLeft, false, kMuted);
      y += lineH_;
      continue;
    }
    int64_t set = 0;
    for (uint64_t x : b.dense_bits) set += std::popcount(x);
    const QString which = b.level == 0 ? QStringLiteral("D_1 (the root's row)") : QStringLiteral("row %1 of D_2 (after token %1)").arg(b.prefix.empty() ? -1 : b.prefix[0]);
    QString label = QStringLiteral("b%1 %2: %3 of %4 tokens allowed").arg(b.beam).arg(which).arg(set).arg(pic_.vocab_size);
    if (words > kMaxGridRows) label += QStringLiteral(" (first %1 tokens drawn)").arg(kMaxGridRows * 64);
    addText(QRectF(kMargin, y, 760, lineH_), label, Qt::AlignLeft, false, constraint_beam_color(b.beam));
    y += lineH_;
    for (int r = 0; r < gridRows_; r += std::max(1, gridRows_ - 1))  // first and last line: 7-pixel rows leave no room for more
      addText(QRectF(kMargin, y + r * cell_ - 3, 34, cell_ + 6), QString::number(r * 64), Qt::AlignRight, false, kMuted);
    grids_.push_back({QPointF(kMargin + 40, y), &b});
    y += gridRows_ * cell_ + 8;
  }
  size_.setWidth(std::max(size_.width(), kMargin + 40 + 64 * cell_ + kMargin));
}

void ConstraintFigure::layoutAfterTable(double& y) {
  if (pic_.after.empty()) return;
  addText(QRectF(kMargin, y, 760, lineH_), QStringLiteral("Beams after this step: their states on the index (what the next step masks with)"),
          Qt::AlignLeft, true, kMuted);
  y += lineH_;
  const std::vector<double> w = {44, 120, 60, 70, 470};
  y = tableRow(y, w, {QStringLiteral("beam"), QStringLiteral("tokens"), QStringLiteral("state"), QStringLiteral("ids below"),
                      QStringLiteral("allowed next: token→#state (ids)")},
               true);
  for (const ConstraintBeam& b : pic_.after) {
    hits_.push_back({QRectF(kMargin, y, w[0], lineH_), b.node});
    const QString state = b.state >= 0 ? QStringLiteral("#%1").arg(b.state) : (pic_.indexed ? QStringLiteral("dead") : QStringLiteral("?"));
    y = tableRow(y, w, {QStringLiteral("b%1").arg(b.beam), tokens_text(b), state, b.items >= 0 ? QString::number(b.items) : QStringLiteral("-"),
                        next_text(b, pic_.length)},
                 false);
    texts_[texts_.size() - 5].color = constraint_beam_color(b.beam);
  }
  y += 6;
}

void ConstraintFigure::paintTree(QPainter& p, int32_t selectedNode) const {
  const auto& tree = pic_.tree;
  p.setPen(QPen(QColor(150, 150, 160), 1.2));
  for (size_t i = 1; i < tree.size() && i < boxes_.size(); ++i) {
    const QRectF& a = boxes_[static_cast<size_t>(tree[i].parent)];
    p.drawLine(QPointF(a.center().x(), a.bottom()), QPointF(boxes_[i].center().x(), boxes_[i].top()));
  }
  for (const auto& [r, parent] : more_) {
    const QRectF& a = boxes_[static_cast<size_t>(parent)];
    p.setPen(QPen(QColor(170, 170, 180), 1, Qt::DashLine));
    p.drawLine(QPointF(a.center().x(), a.bottom()), QPointF(r.center().x(), r.top()));
    p.setBrush(QColor(246, 246, 248));
    p.drawRoundedRect(r, 4, 4);
  }
  for (size_t i = 0; i < tree.size() && i < boxes_.size(); ++i) {
    const auto& n = tree[i];
    QColor fill(255, 255, 255);
    if (!n.masked_beams.empty()) fill = constraint_beam_color(n.masked_beams.front()).lighter(185);
    else if (!n.after_beams.empty()) fill = QColor(250, 250, 236);
    p.setBrush(fill);
    p.setPen(QPen(QColor(90, 90, 100), 1));
    p.drawRoundedRect(boxes_[i], 5, 5);
  }
  for (const Badge& b : badges_) {
    const QColor c = constraint_beam_color(b.beam);
    const bool sel = selectedNode >= 0 && b.node == selectedNode;
    p.setPen(QPen(sel ? kSelection : c, sel ? 2.5 : 1.2));
    p.setBrush(b.after ? QColor(255, 255, 255) : c);
    p.drawRoundedRect(b.rect, 6, 6);
    p.setFont(font_);
    p.setPen(b.after ? c : QColor(255, 255, 255));
    p.drawText(b.rect, Qt::AlignCenter, QStringLiteral("b%1").arg(b.beam));
  }
}

void ConstraintFigure::paintDense(QPainter& p) const {
  for (const DenseGrid& g : grids_) {
    const ConstraintBeam& b = *g.beam;
    for (int r = 0; r < gridRows_ && r < static_cast<int>(b.dense_bits.size()); ++r)
      for (int c = 0; c < 64; ++c) {
        const int tok = r * 64 + c;
        if (tok >= pic_.vocab_size) break;
        const bool on = (b.dense_bits[static_cast<size_t>(r)] >> c) & 1u;
        const QRectF cell(g.origin.x() + c * cell_, g.origin.y() + r * cell_, cell_ - 1, cell_ - 1);
        p.fillRect(cell, on ? kMaskAllowed : kMaskForbidden);
        for (const auto& k : b.kept)
          if (k.first == tok) {
            p.setPen(QPen(kAddedOutline, 1.5));
            p.setBrush(Qt::NoBrush);
            p.drawRect(cell.adjusted(-1, -1, 1, 1));
          }
      }
  }
}

void ConstraintFigure::paint(QPainter& p, int32_t selectedNode) const {
  p.save();
  p.setRenderHint(QPainter::Antialiasing, true);
  p.fillRect(QRectF(QPointF(0, 0), size_), Qt::white);
  paintTree(p, selectedNode);
  paintDense(p);
  for (const Text& t : texts_) {
    p.setFont(t.bold ? bold_ : font_);
    p.setPen(t.color);
    p.drawText(t.rect, t.flags, t.text);
  }
  for (const Hit& h : hits_)
    if (selectedNode >= 0 && h.node == selectedNode && h.rect.width() > kBadgeW) {
      p.setPen(QPen(kSelection, 2));
      p.setBrush(Qt::NoBrush);
      p.drawRect(h.rect);
    }
  p.restore();
}

int32_t ConstraintFigure::nodeAt(QPointF pt) const {
  for (const Hit& h : hits_)
    if (h.rect.contains(pt) && h.node >= 0) return h.node;
  return -1;
}

QRectF ConstraintFigure::beamMarkerRect(int32_t beam, bool after) const {
  for (const Badge& b : badges_)
    if (b.beam == beam && b.after == after && b.node >= 0) return b.rect;
  return {};
}

QStringList ConstraintFigure::texts() const {
  QStringList out;
  for (const Text& t : texts_) out << t.text;
  return out;
}

}  // namespace triescope::gui
