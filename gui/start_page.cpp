#include "gui/start_page.h"

#include <QDir>
#include <QFile>
#include <QLabel>
#include <QPushButton>
#include <QVBoxLayout>

#include "core/common/error.h"
#include "core/config/json_reader.h"

namespace triescope::gui {

namespace {
// The samples that reproduce a paper's figure, and what each figure teaches.
struct FigureEntry {
  const char* file;
  const char* shows;
};
constexpr FigureEntry kFigures[] = {
    {"figure1_once_upon_a_time.json", "Three beams share one prefix in one KV cache; 'far' falls out and garbage collection frees its slot."},
    {"dsbd_figure3.json", "A draft forest scored in one forward pass with the ancestor mask, then verified layer by layer."},
    {"multigen_figure1.json", "Two samples after one stored prompt: blocked position ids, each token sees only its own sample."},
    {"static_figure1.json", "A constraint set as a prefix tree and CSR rows: each beam may take only the tokens its state allows."},
    {"lookahead_repetitive.json", "Lookahead n-gram candidates merged into a trie and verified once each; the output equals greedy."},
};
}  // namespace

QString samples_dir() {
  const QByteArray env = qgetenv("TRIESCOPE_SAMPLES_DIR");
  return env.isEmpty() ? QStringLiteral(TRIESCOPE_SAMPLES_DIR) : QString::fromLocal8Bit(env);
}

std::vector<StartSample> start_samples(const QString& dir) {
  std::vector<StartSample> out;
  for (const FigureEntry& e : kFigures) {
    const QString path = QDir(dir).filePath(QString::fromLatin1(e.file));
    if (!QFile::exists(path)) continue;
    try {
      const json j = json_load_file(path.toStdString());
      if (!j.is_object() || !j.contains("name") || !j["name"].is_string()) continue;
      out.push_back({path, QString::fromStdString(j["name"].get<std::string>()), QString::fromUtf8(e.shows)});
    } catch (const Error&) {
      continue;  // a broken sample is not offered; opening it by hand names the problem
    }
  }
  return out;
}

StartPage::StartPage(QWidget* parent) : QWidget(parent), samples_(start_samples(samples_dir())) {
  setObjectName(QStringLiteral("startPage"));
  auto* lay = new QVBoxLayout(this);
  lay->setContentsMargins(40, 30, 40, 30);
  auto* title = new QLabel(tr("<h2>TrieScope</h2><p>Step through tree-structured decoding: the token trie, the attention mask, "
                              "position ids and the KV cache. Open a trace (File &gt; Open, or drop a .jsonl here), "
                              "or start with a paper's figure, decoded live and narrated step by step:</p>"),
                           this);
  title->setWordWrap(true);
  lay->addWidget(title);
  for (size_t i = 0; i < samples_.size(); ++i) {
    auto* b = new QPushButton(this);
    b->setObjectName(QStringLiteral("startSample%1").arg(i));
    b->setText(samples_[i].name + QStringLiteral("\n") + samples_[i].shows);
    b->setStyleSheet(QStringLiteral("text-align: left; padding: 8px;"));
    b->setToolTip(samples_[i].path);
    connect(b, &QPushButton::clicked, this, [this, i] { choose(i); });
    lay->addWidget(b);
  }
  if (samples_.empty())
    lay->addWidget(new QLabel(tr("No paper-figure samples found in %1 (set TRIESCOPE_SAMPLES_DIR to the samples folder).").arg(samples_dir()), this));
  lay->addStretch(1);
}

void StartPage::choose(size_t i) {
  if (i < samples_.size()) Q_EMIT sampleChosen(samples_[i].path);
}

}  // namespace triescope::gui
