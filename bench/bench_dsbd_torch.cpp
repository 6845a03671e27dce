// DSBD on the LibTorch transformer pair (docs/benchmarks-dsbd.md, section
// "Transformer pair"). Target: a seeded random Llama decoder; drafts: the
// target with perturbed weights ("perturb_std") and the target's first layers
// ("keep_layers"), built through model_from_json exactly as a sample's
// draft_model. Beam sampling W = 1..3, speculative decoding and a few DSBD
// configurations decode the same prompts with the same seeds; per
// configuration: target / draft forward passes per output token, acceptance per
// layer, tokens/s, the seconds spent inside each model, and the target
// log-likelihood per token of the best output beam.
//
//   bench_dsbd_torch [--layers 4] [--hidden 128] [--vocab 512] [--init-std 0.2] [--perturb 0.02] [--keep 2]
//                    [--prompts 4] [--seeds 2] [--max-new 32] [--csv docs/results/dsbd_torch_points.csv]
//                    [--device cpu] [--attention auto]
#include <chrono>
#include <cstdio>
#include <iostream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "core/common/error.h"
#include "core/common/file_io.h"
#include "bench/bench_llama.h"
#include "core/decode/dsbd.h"
#include "core/decode/sampling.h"
#include "core/decode/speculative.h"
#include "core/model/model_factory.h"
#include "core/model/torch/torch_transformer.h"
#include "core/select/philox.h"
#include "core/trace/trace.h"

using namespace triescope;

namespace {
// Forwards every call and adds up the seconds spent in forward(): what each
// model costs on this CPU, separately for target and draft.
class TimedModel : public Model {
 public:
  explicit TimedModel(std::unique_ptr<Model> m) : m_(std::move(m)) {}
  int32_t vocab_size() const override { return m_->vocab_size(); }
  void forward(const StepInput& in, Logits& out) override {
    const auto t0 = std::chrono::steady_clock::now();
    m_->forward(in, out);
    seconds += std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  }
  void compact(const CompactionPlan& plan) override { m_->compact(plan); }
  void reset() override { m_->reset(); }
  nlohmann::json describe() const override { return m_->describe(); }
  KvShape kv_shape() const override { return m_->kv_shape(); }
  double seconds = 0.0;

 private:
  std::unique_ptr<Model> m_;
};

std::string fmt(double x, int prec = 4) {
  std::ostringstream os;
  os.setf(std::ios::fixed);
  os.precision(prec);
  os << x;
  return os.str();
}

struct Acc {
  double tcalls = 0, dcalls = 0, tq = 0, dq = 0, ll = 0, secs = 0, tsecs = 0, dsecs = 0;
  double acc = 0, ver = 0, wsum = 0, full = 0, fsteps = 0;
  std::vector<double> la = std::vector<double>(3, 0), lv = std::vector<double>(3, 0);
  int64_t peak_shared = 0, peak_paper = 0;
};
}  // namespace

int main(int argc, char** argv) {
  bench::Options a = {{"layers", "4"},   {"hidden", "128"}, {"vocab", "512"},    {"init-std", "0.2"},
                      {"perturb", "0.02"}, {"keep", "2"},    {"prompts", "4"},    {"seeds", "2"},
                      {"max-new", "32"},  {"csv", "docs/results/dsbd_torch_points.csv"},
                      {"device", "cpu"},  {"attention", "auto"}};
  if (!bench::parse_options(argc, argv, a, "bench_dsbd_torch")) return 2;
  try {
    torch_models_register();
    bench::register_device_kernels();
    const int layers = std::stoi(a["layers"]), hidden = std::stoi(a["hidden"]), vocab = std::stoi(a["vocab"]);
    const int prompts = std::stoi(a["prompts"]), seeds = std::stoi(a["seeds"]), max_new = std::stoi(a["max-new"]);
    const json target_obj = {{"type", "transformer"},
                             {"random_init",
                              {{"vocab_size", vocab}, {"hidden_size", hidden}, {"intermediate_size", 3 * hidden},
                               {"num_hidden_layers", layers}, {"num_attention_heads", 4}, {"num_key_value_heads", 2},
                               {"max_position_embeddings", 4096}}},
                             {"seed", 7},
                             {"init_std", std::stod(a["init-std"])},
                             {"device", a["device"]},
                             {"attention", a["attention"]}};
    auto build = [&](json extra) {
      json j = target_obj;
      for (auto& [k, v] : extra.items()) j[k] = v;
      return std::make_unique<TimedModel>(model_from_json(JsonObjectReader(j, "bench_dsbd_torch", "model")));
    };
    auto target = build(json::object());
    struct Draft {
      std::string name;
      std::unique_ptr<TimedModel> m;
    };
    std::vector<Draft> drafts;
    drafts.push_back({"perturb_std=" + a["perturb"], build({{"perturb_std", std::stod(a["perturb"])}, {"perturb_seed", 1}})});
    drafts.push_back({"keep_layers=" + a["keep"], build({{"keep_layers", std::stoi(a["keep"])}})});
    std::printf("target: random Llama, layers %d, hidden %d, intermediate %d, heads 4, kv_heads 2, vocab %d, init_std %s, fp32 %s, attention %s\n",
                layers, hidden, 3 * hidden, vocab, a["init-std"].c_str(), a["device"].c_str(), a["attention"].c_str());
    std::printf("drafts: %s (same cost per pass), %s (%s of %d layers); %d prompts of 16 tokens x %d seeds, %d new tokens, temperature 1\n",
                drafts[0].name.c_str(), drafts[1].name.c_str(), a["keep"].c_str(), layers, prompts, seeds, max_new);

    std::vector<std::vector<int32_t>> prompt_set;
    for (int p = 0; p < prompts; ++p) {
      std::vector<int32_t> pr;
      for (int i = 0; i < 16; ++i)
        pr.push_back(static_cast<int32_t>(philox_uniform(PhiloxKey{2024}, static_cast<uint32_t>(p), 0, 0, static_cast<uint32_t>(i), RandStream::target_sample) * vocab));
      prompt_set.push_back(pr);
    }
    {  // warm-up (LibTorch's first calls allocate)
      BeamConfig w;
      w.num_beams = 2;
      w.max_new_tokens = 4;
      beam_sampling(*target, prompt_set[0], w, SamplingConfig{});
    }
    const double steps_total = static_cast<double>(prompts) * seeds * max_new;
    const char* header =
        "method,draft,params,target_passes_per_token,draft_passes_per_token,target_queries_per_token,draft_queries_per_token,"
        "accept_l1,accept_l2,accept_l3,per_token_acceptance,mean_width,steps_per_full_iteration,loglik_per_token,tokens_per_s,"
        "target_seconds,draft_seconds,peak_kv_shared,peak_kv_baseline_layout";
    std::ostringstream csv;
    csv << header << "\n";
    std::cout << header << std::endl;
    auto emit = [&](const std::string& method, const std::string& draft, const std::string& params, const Acc& x) {
      std::ostringstream r;
      r << method << ',' << draft << ",\"" << params << "\"," << fmt(x.tcalls / steps_total) << ',' << fmt(x.dcalls / steps_total) << ','
        << fmt(x.tq / steps_total, 2) << ',' << fmt(x.dq / steps_total, 2) << ',';
      for (int l = 0; l < 3; ++l) r << (x.lv[static_cast<size_t>(l)] > 0 ? fmt(x.la[static_cast<size_t>(l)] / x.lv[static_cast<size_t>(l)], 3) : "") << ',';
      r << (x.ver > 0 && method == "speculative" ? fmt(x.acc / x.ver, 3) : "") << ',';
      r << (method == "dsbd" ? fmt(x.wsum / std::max(1.0, x.lv[0] + x.lv[1] + x.lv[2]), 2) : "") << ','
        << (x.full > 0 ? fmt(x.fsteps / x.full, 3) : "") << ',' << fmt(x.ll / steps_total) << ',' << fmt(steps_total / x.secs, 1) << ','
        << fmt(x.tsecs, 3) << ',' << fmt(x.dsecs, 3) << ',' << x.peak_shared << ',' << x.peak_paper;
      std::cout << r.str() << std::endl;
      csv << r.str() << "\n";
    };
    for (int W = 1; W <= 3; ++W) {
      Acc x;
      target->seconds = 0;
      for (int p = 0; p < prompts; ++p)
        for (int s = 0; s < seeds; ++s) {
          BeamConfig cfg;
          cfg.num_beams = W;
          cfg.max_new_tokens = max_new;
          cfg.gc_interval = 8;
          SamplingConfig sc;
          sc.seed = static_cast<uint64_t>(s + 1);
          const auto r = beam_sampling(*target, prompt_set[static_cast<size_t>(p)], cfg, sc);
          x.tcalls += static_cast<double>(r.sampling.target_calls);
          x.tq += static_cast<double>(r.sampling.target_tokens);
          x.ll += r.sampling.log_likelihood;
          x.secs += r.decode.metrics.seconds;
          x.peak_shared = std::max<int64_t>(x.peak_shared, r.decode.metrics.peak_slots);
          x.peak_paper = std::max<int64_t>(x.peak_paper, r.decode.metrics.batch_peak_slots);
        }
      x.tsecs = target->seconds;
      emit("beam_sampling", "-", "W=" + std::to_string(W), x);
    }
    for (Draft& d : drafts) {
      for (int gamma : {2, 3}) {
        Acc x;
        target->seconds = d.m->seconds = 0;
        for (int p = 0; p < prompts; ++p)
          for (int s = 0; s < seeds; ++s) {
            SpeculativeConfig c;
            c.gamma = gamma;
            c.max_new_tokens = max_new;
            c.sampling.seed = static_cast<uint64_t>(s + 1);
            const auto r = speculative_decode(*target, *d.m, prompt_set[static_cast<size_t>(p)], c);
            x.tcalls += static_cast<double>(r.sampling.target_calls);
            x.dcalls += static_cast<double>(r.sampling.draft_calls);
            x.tq += static_cast<double>(r.sampling.target_tokens);
            x.dq += static_cast<double>(r.sampling.draft_tokens);
            x.ll += r.sampling.log_likelihood;
            x.secs += r.decode.metrics.seconds;
            x.acc += static_cast<double>(r.sampling.layers_accepted);
            x.ver += static_cast<double>(r.sampling.layers_verified);
            x.peak_shared = x.peak_paper = std::max<int64_t>(x.peak_shared, r.decode.metrics.peak_slots);
          }
        x.tsecs = target->seconds;
        x.dsecs = d.m->seconds;
        emit("speculative", d.name, "gamma=" + std::to_string(gamma), x);
      }
      struct Cfg { int ws, gamma; double t; int wmin; };
      for (const Cfg& g : {Cfg{2, 2, 0.7, 1}, Cfg{3, 3, 0.7, 1}, Cfg{4, 2, 0.9, 2}, Cfg{4, 3, 0.9, 2}, Cfg{6, 3, 0.9, 3}}) {
        Acc x;
        target->seconds = d.m->seconds = 0;
        for (int p = 0; p < prompts; ++p)
          for (int s = 0; s < seeds; ++s) {
            DsbdConfig c;
            c.draft_width = g.ws;
            c.gamma = g.gamma;
            c.dynamic = true;
            c.threshold = g.t;
            c.min_width = g.wmin;
            c.max_new_tokens = max_new;
            c.sampling.seed = static_cast<uint64_t>(s + 1);
            const auto r = dsbd_decode(*target, *d.m, prompt_set[static_cast<size_t>(p)], c);
            x.tcalls += static_cast<double>(r.out.sampling.target_calls);
            x.dcalls += static_cast<double>(r.out.sampling.draft_calls);
            x.tq += static_cast<double>(r.out.sampling.target_tokens);
            x.dq += static_cast<double>(r.out.sampling.draft_tokens);
            x.ll += r.out.sampling.log_likelihood;
            x.secs += r.out.decode.metrics.seconds;
            x.wsum += static_cast<double>(r.stats.width_sum);
            for (size_t l = 0; l < r.stats.layer_verified.size(); ++l) {
              x.la[l] += static_cast<double>(r.stats.layer_accepted[l]);
              x.lv[l] += static_cast<double>(r.stats.layer_verified[l]);
            }
            x.full += static_cast<double>(r.stats.full_iterations);
            x.fsteps += static_cast<double>(r.stats.steps_in_full_iterations);
            x.peak_shared = std::max<int64_t>(x.peak_shared, r.stats.shared_peak_slots);
            x.peak_paper = std::max<int64_t>(x.peak_paper, r.stats.paper_peak_slots);
          }
        x.tsecs = target->seconds;
        x.dsecs = d.m->seconds;
        std::ostringstream ps;
        ps << "W_S=" << g.ws << " gamma=" << g.gamma << " t=" << g.t << " W_min=" << g.wmin;
        emit("dsbd", d.name, ps.str(), x);
      }
    }
    if (!a["csv"].empty()) {
      file_write_atomic(a["csv"], csv.str());
      std::cout << "wrote " << a["csv"] << "\n";
    }
  } catch (const Error& e) {
    std::cerr << "bench_dsbd_torch: " << e.what() << "\n";
    return 1;
  }
  return 0;
}
