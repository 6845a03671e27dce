// What the inspector shows when opened with nothing: the paper-figure samples
// by name, one line each on what the figure shows; a click runs one.
#pragma once
#include <QString>
#include <QWidget>

#include <vector>

namespace triescope::gui {

struct StartSample {
  QString path;   // the sample file
  QString name;   // its "name" field
  QString shows;  // one line: what the paper's figure shows
};

// The samples folder: $TRIESCOPE_SAMPLES_DIR, else the checkout's samples/
// this binary was built from.
QString samples_dir();
// The paper-figure samples present in `dir`, in reading order; a sample file
// that is missing or has no "name" is left out.
std::vector<StartSample> start_samples(const QString& dir);

class StartPage final : public QWidget {
  Q_OBJECT
 public:
  explicit StartPage(QWidget* parent = nullptr);
  const std::vector<StartSample>& samples() const { return samples_; }
  // As a click on the i-th entry.
  void choose(size_t i);

 Q_SIGNALS:
  void sampleChosen(const QString& path);

 private:
  std::vector<StartSample> samples_;
};

}  // namespace triescope::gui
