#include <fstream>
#include <iomanip>
#include <iostream>
#include <sstream>

#include "app/commands.h"
#include "core/common/error.h"
#include "core/trace/kv_record.h"
#include "core/common/file_io.h"
#include "core/decode/batch_beam_search.h"
#include "core/decode/run_sample.h"
#include "core/decode/trie_beam_search.h"
#include "core/model/synthetic_model.h"
#include "core/trace/trace.h"

namespace triescope::cli {

namespace {
std::vector<int32_t> int_list(const std::string& s, const char* opt) {
  std::vector<int32_t> v;
  std::stringstream ss(s);
  std::string item;
  while (std::getline(ss, item, ',')) {
    const std::optional<int64_t> x = integer_parse(item);
    TS_CHECK(x && *x > 0 && *x <= INT32_MAX, "simulate: --" << opt << " must be a comma-separated list of positive integers, got '" << s << "'");
    v.push_back(static_cast<int32_t>(*x));
  }
  TS_CHECK(!v.empty(), "simulate: --" << opt << " is empty");
  return v;
}
}  // namespace

// The shape of the trie paper's Figure 3 / Table 1: KV slots per step and
// Mem/Tok for trie vs batch, over beam widths and lengths.
int cmd_simulate(const Args& args) {
  auto p = parse_args(args, {"sample", "beams", "lengths", "prompt-len", "vocab", "seed", "eos-rate", "gc", "csv"}, {});
  TS_CHECK(p.positional.empty(), "simulate: unexpected argument '" << p.positional.front() << "'");
  std::unique_ptr<Model> model;
  std::vector<int32_t> prompt;
  BeamConfig base;
  std::vector<int32_t> beams = int_list(p.get("beams", "3,9,15"), "beams");
  std::vector<int32_t> lengths = int_list(p.get("lengths", "64,256"), "lengths");
  if (p.has("sample")) {
    Sample s = sample_load(p.get("sample"));
    model = std::move(s.model);
    prompt = s.prompt;
    const auto* beam = dynamic_cast<const BeamSection*>(s.config.get());
    TS_CHECK(beam, "simulate: --sample " << p.get("sample") << ": algorithm " << s.algorithm << " has no beam section");
    base = beam->beam;
    if (!p.has("beams")) beams = {base.num_beams};
    if (!p.has("lengths")) lengths = {base.max_new_tokens};
  } else {
    SyntheticConfig c;
    c.vocab_size = int_list(p.get("vocab", "512"), "vocab").front();
    c.seed = static_cast<uint64_t>(int_list(p.get("seed", "1"), "seed").front());
    c.eos_token = c.vocab_size - 1;
    c.eos_per_million = static_cast<int32_t>(std::stod(p.get("eos-rate", "0")) * 1e6);
    c.nominal_shape = {32, 8, 128, 2};
    model = std::make_unique<SyntheticModel>(c);
    const int32_t n = int_list(p.get("prompt-len", "128"), "prompt-len").front();
    for (int32_t i = 0; i < n; ++i) prompt.push_back((i * 7 + 3) % (c.vocab_size - 1));
    base.eos_token = c.eos_per_million > 0 ? c.eos_token : -1;
  }
  base.gc_interval = p.has("gc") ? int_list(p.get("gc"), "gc").front() : (base.gc_interval > 0 ? base.gc_interval : 8);

  std::ostringstream csv;
  // Mem/Tok per step: the trie paper's Eq. 1 over the KV cache, with the
  // tokens so far (prompt + step) as the denominator.
  csv << "beams,max_new_tokens,step,trie_slots,batch_slots,trie_peak,trie_mem_per_tok,batch_mem_per_tok\n";
  const int64_t bps = model->kv_shape().bytes_per_slot();
  std::cout << "prompt " << prompt.size() << " tokens, gc every " << base.gc_interval << " steps, "
            << model->kv_shape().bytes_per_slot() << " bytes per slot\n";
  std::cout << std::setw(6) << "beams" << std::setw(8) << "length" << std::setw(12) << "trie peak" << std::setw(12)
            << "batch peak" << std::setw(10) << "ratio" << std::setw(16) << "Mem/Tok trie" << std::setw(16)
            << "Mem/Tok batch" << "  same outputs\n";
  for (int32_t b : beams)
    for (int32_t len : lengths) {
      BeamConfig cfg = base;
      cfg.num_beams = b;
      cfg.max_new_tokens = len;
      TS_CHECK(2 * b <= model->vocab_size(), "simulate: beams " << b << " needs vocabulary >= " << 2 * b);
      MemoryTraceSink sink;
      DecodeOptions opt;
      opt.keyframe_interval = 0;
      const DecodeResult trie = trie_beam_search(*model, prompt, cfg, &sink, opt);
      const DecodeResult batch = batch_beam_search(*model, prompt, cfg);
      for (const auto& r : sink.records)
        if (r.value("kind", "") == "step") {
          const int64_t step = r["step"].get<int64_t>(), tokens = static_cast<int64_t>(prompt.size()) + step;
          const KvRecord kv = KvRecord::from_json(r.at(kKvField), "simulate: step " + std::to_string(step) + ": " + kKvField);
          TS_CHECK(kv.batch_slots, "simulate: step " << step << ": the trace records no batch layout");  // trie beam search does
          const int64_t batch_slots = *kv.batch_slots;
          csv << b << "," << len << "," << step << "," << kv.slots << "," << batch_slots << "," << kv.peak << ","
              << mem_per_token(kv.peak * bps, tokens, 0) << "," << mem_per_token(batch_slots * bps, tokens, 0) << "\n";
        }
      bool same = trie.hypotheses.size() == batch.hypotheses.size();
      for (size_t i = 0; same && i < trie.hypotheses.size(); ++i) same = trie.hypotheses[i].tokens == batch.hypotheses[i].tokens;
      const auto& tm = trie.metrics;
      std::cout << std::setw(6) << b << std::setw(8) << len << std::setw(12) << tm.peak_slots << std::setw(12)
                << batch.metrics.peak_slots << std::setw(9) << std::fixed << std::setprecision(2)
                << static_cast<double>(batch.metrics.peak_slots) / static_cast<double>(tm.peak_slots) << "x"
                << std::setw(16) << std::setprecision(0) << tm.mem_per_token << std::setw(16)
                << batch.metrics.mem_per_token << "  " << (same ? "yes" : "NO") << "\n";
    }
  if (p.has("csv")) {
    file_write_atomic(p.get("csv"), csv.str());
    std::cout << "per-step CSV: " << p.get("csv") << "\n";
  }
  return 0;
}

}  // namespace triescope::cli
