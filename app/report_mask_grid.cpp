#include "app/report_mask_grid.h"

#include <algorithm>
#include <sstream>

#include "app/report_escape.h"

namespace triescope::cli {

namespace {
// Two grids side by side on a 1400-pixel-wide page, 15 pixels a cell plus the row labels.
constexpr int32_t kRowsShown = 40, kColsShown = 30;

void span_around(int32_t n, int32_t focus, int32_t shown, int32_t& lo, int32_t& hi) {
  if (n <= shown) {
    lo = 0;
    hi = n;
    return;
  }
  lo = std::clamp(std::max(focus, 0) - shown / 2, 0, n - shown);
  hi = lo + shown;
}
}  // namespace

GridWindow grid_window(int32_t rows, int32_t cols, int32_t focus_row, int32_t focus_col) {
  GridWindow w;
  span_around(rows, focus_row, kRowsShown, w.row0, w.row1);
  span_around(cols, focus_col, kColsShown, w.col0, w.col1);
  return w;
}

std::string mask_grid_html(const MaskGridSpec& g) {
  std::ostringstream os;
  const GridWindow& w = g.window;
  os << "<div class=\"grid\"><h3>" << markup_escape(g.title) << "</h3>\n";
  os << "<div class=\"caption\">" << g.rows << " rows x " << g.cols << " slots";
  if (w.row0 > 0 || w.row1 < g.rows || w.col0 > 0 || w.col1 < g.cols)
    os << "; shown: rows " << w.row0 << "-" << w.row1 - 1 << ", slots " << w.col0 << "-" << w.col1 - 1;
  os << "</div>\n<table class=\"mask\"><tr><th></th>";
  for (int32_t c = w.col0; c < w.col1; ++c) os << "<th>" << (c % 5 == 0 ? std::to_string(c) : std::string()) << "</th>";
  os << "</tr>\n";
  for (int32_t r = w.row0; r < w.row1; ++r) {
    os << "<tr" << (g.focus_rows.count(r) ? " class=\"focus\"" : "") << "><td class=\"lbl\">" << markup_escape(g.row_label(r)) << "</td>";
    for (int32_t c = w.col0; c < w.col1; ++c) {
      const int b = g.bit(r, c);
      const bool m = g.marked && g.marked(r, c);
      os << "<td class=\"" << (b < 0 ? "none" : b ? "on" : "off");
      if (m) os << " " << g.mark_class << "\" title=\"row " << r << ", slot " << c << ": " << (b < 0 ? "absent" : b ? "1" : "0");
      os << "\"></td>";
    }
    os << "</tr>\n";
  }
  os << "</table></div>\n";
  return os.str();
}

}  // namespace triescope::cli
