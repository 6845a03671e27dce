// A recorded attention mask as an HTML table (rows = queries, columns = KV
// slots), the way the inspector's mask pane draws it, with cells a report
// marks: "wrong" (check: a cell that breaks the ancestor rule) or "differ"
// (diff: a cell where trace B's bit is not trace A's). A big mask shows a
// window around the cell of interest, and the caption says which.
#pragma once
#include <cstdint>
#include <functional>
#include <set>
#include <string>

namespace triescope::cli {

struct GridWindow {
  int32_t row0 = 0, row1 = 0;  // rows [row0, row1)
  int32_t col0 = 0, col1 = 0;  // columns [col0, col1)
};

// All rows and columns when they fit in the page, else a window holding
// `focus_row` and `focus_col` (-1: none).
GridWindow grid_window(int32_t rows, int32_t cols, int32_t focus_row, int32_t focus_col);

struct MaskGridSpec {
  std::string title;          // plain text
  int32_t rows = 0, cols = 0; // the whole mask, for the caption
  GridWindow window;
  std::function<std::string(int32_t)> row_label;  // plain text: node, token, position
  std::function<int(int32_t, int32_t)> bit;       // 1, 0, or -1: no such cell in this mask
  std::function<bool(int32_t, int32_t)> marked;   // a cell the report is about
  const char* mark_class = "wrong";               // "wrong" or "differ"
  std::set<int32_t> focus_rows;                   // rows whose label is emphasised
};

std::string mask_grid_html(const MaskGridSpec& g);

}  // namespace triescope::cli
