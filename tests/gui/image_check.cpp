// Checks that a screenshot is not blank: prints its size, the number of
// distinct colours and the share of pixels that differ from the most common
// colour; exits 1 when the image is unreadable or (nearly) uniform.
#include <QGuiApplication>
#include <QHash>
#include <QImage>

#include <cstdio>

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: triescope_gui_image_check image.png [min_colours=16] [min_nonbg=0.05]\n");
    return 2;
  }
  const QImage img = QImage(QString::fromLocal8Bit(argv[1])).convertToFormat(QImage::Format_RGB32);
  if (img.isNull()) {
    std::fprintf(stderr, "%s: cannot read the image\n", argv[1]);
    return 1;
  }
  const int min_colours = argc > 2 ? std::atoi(argv[2]) : 16;
  const double min_nonbg = argc > 3 ? std::atof(argv[3]) : 0.05;
  QHash<QRgb, qint64> counts;
  for (int y = 0; y < img.height(); ++y) {
    const QRgb* line = reinterpret_cast<const QRgb*>(img.constScanLine(y));
    for (int x = 0; x < img.width(); ++x) ++counts[line[x]];
  }
  qint64 top = 0;
  for (auto it = counts.cbegin(); it != counts.cend(); ++it) top = std::max(top, it.value());
  const double total = double(img.width()) * img.height();
  const double nonbg = 1.0 - top / total;
  std::printf("%s: %dx%d, %lld colours, %.1f%% non-background\n", argv[1], img.width(), img.height(),
              static_cast<long long>(counts.size()), nonbg * 100);
  return counts.size() >= min_colours && nonbg >= min_nonbg ? 0 : 1;
}
