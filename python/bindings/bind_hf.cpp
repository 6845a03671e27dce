// triescope._core.hf_generate_replay (core/decode/hf_replay.h); python/triescope/hf.py's
// from_hf_generate turns a generate() result into its arguments.
#include <memory>

#include <pybind11/stl.h>

#include "python/bindings/bindings.h"
#include "python/bindings/py_convert.h"
#include "core/model/model_factory.h"
#include "core/common/error.h"
#include "core/decode/hf_replay.h"

namespace triescope::py {

namespace {

pyb::list outputs(const DecodeResult& r) {
  pyb::list l;
  for (const Hypothesis& h : r.hypotheses) {
    pyb::dict d;
    d["tokens"] = h.tokens;
    d["score"] = h.score;
    d["sum_logprobs"] = h.sum_logprobs;
    l.append(d);
  }
  return l;
}

EarlyStopping early_stopping(pyb::handle obj) {
  if (pyb::isinstance<pyb::bool_>(obj)) return obj.cast<bool>() ? EarlyStopping::yes : EarlyStopping::no;
  if (pyb::isinstance<pyb::str>(obj) && obj.cast<std::string>() == "never") return EarlyStopping::never;
  throw pyb::type_error("early_stopping: expected True, False or \"never\" (generate()'s values)");
}

}  // namespace

void bind_hf(pyb::module_& m) {
  m.def(
      "hf_generate_replay",
      [](pyb::object prompt, pyb::object scores, pyb::object sequences, pyb::object beam_indices, int32_t num_beams,
         int32_t max_new_tokens, int32_t eos_token_id, int32_t pad_token_id, double length_penalty, pyb::object early_stop,
         int32_t gc_interval, pyb::object kv_shape, pyb::object model, pyb::object vocab, pyb::object trie_path,
         pyb::object batch_path, int32_t keyframe_interval, bool batch_item) {
        HfGenerateRun run;
        run.prompt = int32_vector(prompt, "prompt");
        TS_CHECK(!run.prompt.empty(), "prompt: empty");
        if (pyb::isinstance<pyb::str>(scores) || !pyb::isinstance<pyb::sequence>(scores))
          throw pyb::type_error("scores: expected generate()'s tuple of [num_beams x vocab] tensors");
        size_t t = 0;
        for (auto s : scores) {
          const std::string name = "scores[" + std::to_string(t++) + "]";
          auto a = float_rows(s, name);
          TS_CHECK(a.shape(0) == num_beams, name << ": " << a.shape(0) << " rows, expected num_beams = " << num_beams
                                                 << " (one row per beam of the item)");
          if (run.vocab_size == 0) run.vocab_size = static_cast<int32_t>(a.shape(1));
          TS_CHECK(a.shape(1) == run.vocab_size, name << ": " << a.shape(1) << " columns, scores[0] has " << run.vocab_size);
          run.scores.emplace_back(a.data(), a.data() + a.size());
        }
        TS_CHECK(!run.scores.empty(), "scores: empty (call generate() with output_scores=True)");
        run.sequences = int_rows(sequences, "sequences");
        if (!beam_indices.is_none()) run.beam_indices = int_rows(beam_indices, "beam_indices");
        run.pad_token = pad_token_id;
        run.beam.num_beams = num_beams;
        run.beam.max_new_tokens = max_new_tokens;
        run.beam.eos_token = eos_token_id;
        run.beam.length_penalty = length_penalty;
        run.beam.early_stopping = early_stopping(early_stop);
        run.beam.gc_interval = gc_interval;
        TS_CHECK(num_beams >= 1 && max_new_tokens >= 1 && gc_interval >= 0,
                 "num_beams, max_new_tokens must be >= 1 and gc_interval >= 0");
        if (!kv_shape.is_none()) {
          KvShape dflt;
          dflt.layers = 1;
          dflt.kv_heads = 1;
          dflt.head_dim = 64;
          dflt.dtype_bytes = 4;
          run.kv_shape = kv_shape_read(to_json(kv_shape, "kv_shape"), "hf_generate_replay", dflt);
        }
        run.model = to_json(model, "model");
        if (!vocab.is_none()) run.vocab = vocab.cast<std::vector<std::string>>();
        run.keyframe_interval = keyframe_interval;
        run.batch_item = batch_item;
        std::unique_ptr<TraceFileWriter> trie, batch;
        if (!trie_path.is_none()) trie = std::make_unique<TraceFileWriter>(trie_path.cast<std::string>());
        if (!batch_path.is_none()) batch = std::make_unique<TraceFileWriter>(batch_path.cast<std::string>());
        HfReplay r;
        {
          pyb::gil_scoped_release release;
          r = hf_generate_replay(run, batch.get(), trie.get());
        }
        if (trie) trie->commit();
        if (batch) batch->commit();
        pyb::dict out;
        out["trie_outputs"] = outputs(r.trie);
        out["batch_outputs"] = outputs(r.batch);
        out["trie_metrics"] = from_json(r.trie.metrics.to_json());
        out["batch_metrics"] = from_json(r.batch.metrics.to_json());
        return out;
      },
      pyb::arg("prompt"), pyb::arg("scores"), pyb::arg("sequences"), pyb::arg("beam_indices"), pyb::arg("num_beams"),
      pyb::arg("max_new_tokens"), pyb::arg("eos_token_id"), pyb::arg("pad_token_id"), pyb::arg("length_penalty"),
      pyb::arg("early_stopping"), pyb::arg("gc_interval"), pyb::arg("kv_shape"), pyb::arg("model"), pyb::arg("vocab"),
      pyb::arg("trie_path"), pyb::arg("batch_path"), pyb::arg("keyframe_interval"), pyb::arg("batch_item") = false,
      "Re-decodes a Hugging Face beam search from its recorded scores with TrieScope's batch and trie beam search "
      "and writes their traces (core/decode/hf_replay.h). Use triescope.from_hf_generate.");
}

}  // namespace triescope::py
