#include "core/decode/hf_replay.h"

#include <sstream>

#include "core/common/error.h"
#include "core/decode/batch_beam_search.h"
#include "core/decode/trie_beam_search.h"
#include "core/model/scores_replay_model.h"

namespace triescope {

namespace {

std::string text(const std::vector<int32_t>& v) {
  std::ostringstream os;
  os << "[";
  for (size_t i = 0; i < v.size(); ++i) os << (i ? ", " : "") << v[i];
  os << "]";
  return os.str();
}

// Keeps the batch decoder's records (for the beam_indices check) and passes them on.
struct TeeSink final : TraceSink {
  TraceSink* next = nullptr;
  std::vector<json> records;
  void record(json rec) override {
    records.push_back(rec);
    if (next) next->record(std::move(rec));
  }
};

// generate()'s sequence i without the prompt, cut at EOS and padding (our hypotheses hold neither).
std::vector<int32_t> generated(const HfGenerateRun& run, size_t i) {
  const auto& seq = run.sequences[i];
  const size_t n = run.prompt.size();
  TS_CHECK(seq.size() >= n, "sequences[" << i << "]: " << seq.size() << " tokens, shorter than the prompt's " << n);
  for (size_t k = 0; k < n; ++k)
    TS_CHECK(seq[k] == run.prompt[k], "sequences[" << i << "][" << k << "]: " << seq[k] << " is not the prompt's token " << run.prompt[k]
                                                 << " (pass the prompt generate() was given, batch size 1)");
  std::vector<int32_t> out;
  for (size_t k = n; k < seq.size(); ++k) {
    if (seq[k] == run.beam.eos_token) break;
    if (seq[k] == run.pad_token) break;
    TS_CHECK(seq[k] >= 0 && seq[k] < run.vocab_size, "sequences[" << i << "][" << k << "]: token " << seq[k] << " outside [0, " << run.vocab_size << ")");
    out.push_back(static_cast<int32_t>(seq[k]));
  }
  return out;
}

// The row (beam) of the batch layout holding each prefix of `gen` at each
// step, read from the batch trace's chosen beams: row[t] is where the token
// of step t was appended (HF's beam_indices).
std::vector<int64_t> rows_of(const std::vector<json>& records, const std::vector<int32_t>& gen) {
  std::vector<int64_t> rows{0};  // step 1 extends the first copy of the prompt
  for (const json& r : records) {
    if (r.value("kind", "") != "step" || r.value("step", 0) < 1) continue;
    const size_t t = static_cast<size_t>(r["step"].get<int32_t>());  // selection t appends gen[t - 1]
    if (t >= gen.size() || rows.size() != t) break;
    int64_t next = -1;
    for (const json& c : r.value("chosen", json::array()))
      if (c["from_beam"].get<int64_t>() == rows.back() && c["token"].get<int32_t>() == gen[t - 1]) next = c["beam"].get<int64_t>();
    if (next < 0) break;
    rows.push_back(next);
  }
  return rows;
}

// One label per token id, as `triescope run` writes a model's vocab: ids the
// tokenizer does not cover (a vocab padded past the tokenizer, e.g. 704 rows
// for 700 tokens) are labelled by their number.
std::vector<std::string> vocab_padded(std::vector<std::string> vocab, int32_t vocab_size) {
  if (vocab.empty()) return vocab;
  TS_CHECK(vocab.size() <= static_cast<size_t>(vocab_size),
           "vocab: " << vocab.size() << " token strings for the scores' " << vocab_size << " ids (a tokenizer larger than the model's vocab)");
  for (size_t id = vocab.size(); id < static_cast<size_t>(vocab_size); ++id) vocab.push_back(std::to_string(id));
  return vocab;
}

}  // namespace

HfReplay hf_generate_replay(const HfGenerateRun& run, TraceSink* batch_trace, TraceSink* trie_trace) {
  const BeamConfig& cfg = run.beam;
  TS_CHECK(cfg.num_beams >= 1, "num_beams: must be >= 1");
  TS_CHECK(!run.sequences.empty(), "sequences: generate() returned none");
  TS_CHECK(run.sequences.size() <= static_cast<size_t>(cfg.num_beams),
           "sequences: " << run.sequences.size() << " rows for num_beams " << cfg.num_beams << " (num_return_sequences <= num_beams)");
  TS_CHECK(run.beam_indices.empty() || run.beam_indices.size() == run.sequences.size(),
           "beam_indices: " << run.beam_indices.size() << " rows for " << run.sequences.size() << " sequences");
  json model = run.model.is_object() ? run.model : json::object();
  model["type"] = "hf_generate_scores";
  model["vocab_size"] = run.vocab_size;
  model["steps"] = run.scores.size();
  ScoresReplayModel replay(run.vocab_size, cfg.num_beams, run.scores, run.prompt, run.kv_shape, model, vocab_padded(run.vocab, run.vocab_size));
  DecodeOptions opt;
  opt.backend = kHfGenerateBackend;
  opt.keyframe_interval = run.keyframe_interval;

  HfReplay out;
  TeeSink tee;
  tee.next = batch_trace;
  BeamConfig batch_cfg = cfg;
  batch_cfg.gc_interval = 0;  // the batch layout has no garbage collection
  replay.set_lookup(ScoresReplayModel::Lookup::by_row);
  out.batch = batch_beam_search(replay, run.prompt, batch_cfg, &tee, opt);
  TS_CHECK(replay.calls() == replay.steps() || (run.batch_item && replay.calls() < replay.steps()),
           "scores: generate() recorded " << replay.steps() << " steps, the replay used "
                                                                            << replay.calls() << " (the settings differ from the run's)");
  for (size_t i = 0; i < run.sequences.size(); ++i) {
    const std::vector<int32_t> gen = generated(run, i);
    TS_CHECK(i < out.batch.hypotheses.size() && out.batch.hypotheses[i].tokens == gen,
             "sequences[" << i << "]: generate() returned " << text(gen) << ", the replay of its scores gives "
                          << (i < out.batch.hypotheses.size() ? text(out.batch.hypotheses[i].tokens) : std::string("nothing"))
                          << " (num_beams, length_penalty, early_stopping or eos differ from the run's)");
    if (run.beam_indices.empty()) continue;
    const std::vector<int64_t> rows = rows_of(tee.records, gen);
    const auto& bi = run.beam_indices[i];
    for (size_t t = 0; t < rows.size() && t < bi.size(); ++t)
      TS_CHECK(bi[t] == rows[t], "beam_indices[" << i << "][" << t << "]: generate() says beam " << bi[t] << ", the replay has the prefix in beam "
                                                 << rows[t]);
  }
  replay.reset();
  replay.set_lookup(ScoresReplayModel::Lookup::by_context);
  out.trie = trie_beam_search(replay, run.prompt, cfg, trie_trace, opt);
  for (size_t i = 0; i < out.batch.hypotheses.size(); ++i)
    TS_CHECK(i < out.trie.hypotheses.size() && out.trie.hypotheses[i].tokens == out.batch.hypotheses[i].tokens,
             "the trie replay's hypothesis " << i << " differs from the batch replay's " << text(out.batch.hypotheses[i].tokens));
  return out;
}

}  // namespace triescope
