#include "gui/export/figure_export.h"

#include <QFile>
#include <QFileInfo>
#include <QImage>
#include <QPainter>
#include <QSvgGenerator>
#include <QTemporaryFile>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>

#include <sys/stat.h>

namespace triescope::gui {

bool figure_format_of(const QString& path, FigureFormat* out) {
  if (path.endsWith(QStringLiteral(".svg"), Qt::CaseInsensitive)) *out = FigureFormat::svg;
  else if (path.endsWith(QStringLiteral(".png"), Qt::CaseInsensitive)) *out = FigureFormat::png;
  else return false;
  return true;
}

namespace {

// Paints `figure` scaled to fit `target` (uniformly, centred) on `p`.
void paint_fitted(const FigureSource& figure, QPainter& p, QSizeF natural, QSizeF target) {
  const double scale = std::min(target.width() / natural.width(), target.height() / natural.height());
  p.translate((target.width() - natural.width() * scale) / 2, (target.height() - natural.height() * scale) / 2);
  p.scale(scale, scale);
  p.setClipRect(QRectF(QPointF(0, 0), natural));
  figure.paintFigure(p);
}

bool write_svg(const FigureSource& figure, const QString& file, QSizeF natural, QSizeF target) {
  QSvgGenerator gen;
  gen.setFileName(file);
  gen.setSize(target.toSize());
  gen.setViewBox(QRectF(QPointF(0, 0), target));
  gen.setTitle(QStringLiteral("TrieScope %1").arg(figure.figureName()));
  gen.setDescription(QStringLiteral("exported by triescope-gui"));
  QPainter p;
  if (!p.begin(&gen)) return false;
  p.fillRect(QRectF(QPointF(0, 0), target), Qt::white);
  paint_fitted(figure, p, natural, target);
  return p.end();
}

bool write_png(const FigureSource& figure, const QString& file, QSizeF natural, QSizeF target) {
  QImage img(target.toSize(), QImage::Format_ARGB32_Premultiplied);
  if (img.isNull()) return false;  // too big to allocate
  img.fill(Qt::white);
  QPainter p(&img);
  p.setRenderHint(QPainter::Antialiasing);
  p.setRenderHint(QPainter::TextAntialiasing);
  paint_fitted(figure, p, natural, target);
  p.end();
  return img.save(file, "PNG");
}

}  // namespace

bool export_figure(const FigureSource& figure, const QString& path, QSize size, QString* error) {
  auto fail = [&](const QString& m) {
    if (error) *error = path + QStringLiteral(": ") + m;
    return false;
  };
  FigureFormat format;
  if (!figure_format_of(path, &format)) return fail(QStringLiteral("the file name must end in .svg or .png"));
  const QSizeF natural = figure.figureSize();
  if (natural.isEmpty()) return fail(QStringLiteral("the %1 pane has nothing to draw").arg(figure.figureName()));
  const QSizeF target = size.isValid() && !size.isEmpty() ? QSizeF(size) : natural;
  // PNG at most 16384 px a side: larger images fail to allocate or to open elsewhere.
  if (format == FigureFormat::png && std::max(target.width(), target.height()) > 16384)
    return fail(QStringLiteral("%1 x %2 px is more than a PNG of 16384 px a side; choose a size (--export-size)")
                    .arg(target.width()).arg(target.height()));
  const QFileInfo info(path);
  QTemporaryFile tmp(info.absolutePath() + QStringLiteral("/.") + info.fileName().left(64) + QStringLiteral(".XXXXXX.tmp"));
  if (!tmp.open()) return fail(QStringLiteral("cannot create a temporary file in %1 (%2)").arg(info.absolutePath(), tmp.errorString()));
  const QString tmpName = tmp.fileName();
  tmp.close();
  const bool ok = format == FigureFormat::svg ? write_svg(figure, tmpName, natural, target) : write_png(figure, tmpName, natural, target);
  if (!ok || QFileInfo(tmpName).size() == 0) return fail(QStringLiteral("cannot write the %1").arg(format == FigureFormat::svg ? "SVG" : "image"));
  // QTemporaryFile creates 0600; a figure is an ordinary file (0666 less the umask).
  const mode_t mask = ::umask(0);
  ::umask(mask);
  ::chmod(QFile::encodeName(tmpName).constData(), 0666 & ~mask);
  // rename(2) replaces the target in one step; QFile::rename refuses an existing one.
  if (std::rename(QFile::encodeName(tmpName).constData(), QFile::encodeName(path).constData()) != 0)
    return fail(QStringLiteral("cannot rename the temporary file into place (%1)").arg(QString::fromLocal8Bit(std::strerror(errno))));
  tmp.setAutoRemove(false);
  return true;
}

}  // namespace triescope::gui
