// Writes a FigureSource to a file: SVG (vector, text as <text>) or PNG,
// at the figure's natural size or scaled to fit a chosen one. Written to a
// unique temporary beside the target and renamed: never a half-written file.
#pragma once
#include <QSize>
#include <QString>

#include "gui/export/figure_source.h"

namespace triescope::gui {

enum class FigureFormat { svg, png };

// The format a path's suffix names (".svg" or ".png", any case); false for any other.
bool figure_format_of(const QString& path, FigureFormat* out);

// `size` invalid: the natural size; otherwise the figure is scaled uniformly to
// fit `size` and centred (an SVG's viewBox and a PNG's pixels are exactly `size`).
// False with `*error` naming the path and what failed.
bool export_figure(const FigureSource& figure, const QString& path, QSize size, QString* error);

}  // namespace triescope::gui
