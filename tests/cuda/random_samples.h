// Random sample files (as JSON) for every algorithm that verifies or samples,
// on synthetic models: the CPU-vs-host-twin and CPU-vs-CUDA trace tests run
// them through run_sample exactly as `triescope run` would.
#pragma once
#include <random>
#include <vector>

#include "core/config/json_reader.h"

namespace triescope::testing {

inline std::vector<json> random_samples(std::mt19937_64& rng) {
  auto synthetic = [&](int32_t vocab) {
    return json{{"type", "synthetic"}, {"vocab_size", vocab}, {"seed", rng() >> 12},
                {"peakiness", std::uniform_real_distribution<double>(0.25, 3.5)(rng)},
                {"repetitiveness", std::uniform_real_distribution<double>(0.0, 1.0)(rng)},
                {"ngram", std::uniform_int_distribution<int32_t>(1, 4)(rng)}};
  };
  const int32_t vocab = std::uniform_int_distribution<int32_t>(8, 200)(rng);
  std::vector<int32_t> prompt(static_cast<size_t>(std::uniform_int_distribution<int32_t>(1, 24)(rng)));
  for (auto& t : prompt) t = std::uniform_int_distribution<int32_t>(0, vocab - 1)(rng);
  const json target = synthetic(vocab);
  json draft = target;
  draft["perturb_seed"] = rng() >> 12;
  draft["perturb"] = std::uniform_real_distribution<double>(0.0, 2.5)(rng);
  const json sampling = {{"temperature", std::uniform_real_distribution<double>(0.5, 1.5)(rng)},
                         {"top_k", std::uniform_int_distribution<int32_t>(0, 20)(rng)},
                         {"seed", rng() >> 12}};
  const int32_t width = std::uniform_int_distribution<int32_t>(1, 4)(rng);
  const json base = {{"schema", "triescope.sample"}, {"version", 1}, {"name", "random"}, {"model", target}, {"prompt", prompt},
                     {"trace", {{"keyframe_interval", std::uniform_int_distribution<int32_t>(0, 8)(rng)}}}};
  std::vector<json> out;
  json d = base;
  d["algorithm"] = "dsbd";
  d["draft_model"] = draft;
  d["sampling"] = sampling;
  d["beam"] = {{"num_beams", width}, {"max_new_tokens", std::uniform_int_distribution<int32_t>(1, 24)(rng)}};
  d["dsbd"] = {{"draft_width", std::uniform_int_distribution<int32_t>(width, 8)(rng)},
               {"gamma", std::uniform_int_distribution<int32_t>(1, 5)(rng)},
               {"dynamic", std::bernoulli_distribution(0.5)(rng)},
               {"memory_constrained", std::bernoulli_distribution(0.3)(rng)}};
  out.push_back(d);
  json s = base;
  s["algorithm"] = "speculative";
  s["draft_model"] = draft;
  s["sampling"] = sampling;
  s["beam"] = {{"num_beams", 1}, {"max_new_tokens", std::uniform_int_distribution<int32_t>(1, 40)(rng)}};
  s["speculative"] = {{"gamma", std::uniform_int_distribution<int32_t>(1, 6)(rng)}};
  out.push_back(s);
  json b = base;
  b["algorithm"] = "beam_sampling";
  b["sampling"] = sampling;
  b["sampling"]["deterministic"] = std::bernoulli_distribution(0.3)(rng);
  b["beam"] = {{"num_beams", width}, {"max_new_tokens", std::uniform_int_distribution<int32_t>(1, 24)(rng)},
               {"gc_interval", std::uniform_int_distribution<int32_t>(0, 4)(rng)}};
  out.push_back(b);
  json l = base;
  l["algorithm"] = "lookahead";
  l["model"]["repetitiveness"] = 0.9;
  l["lookahead"] = {{"max_new_tokens", std::uniform_int_distribution<int32_t>(1, 80)(rng)},
                    {"window", std::uniform_int_distribution<int32_t>(0, 8)(rng)},
                    {"ngram", std::uniform_int_distribution<int32_t>(2, 5)(rng)},
                    {"max_candidates", std::uniform_int_distribution<int32_t>(0, 8)(rng)},
                    {"trie_depth", std::uniform_int_distribution<int32_t>(1, 6)(rng)},
                    {"trie_nodes", std::uniform_int_distribution<int32_t>(1, 40)(rng)},
                    {"verify", std::bernoulli_distribution(0.5)(rng) ? "trie" : "independent"}};
  out.push_back(l);
  json g = base;
  g["algorithm"] = "greedy";
  g["greedy"] = {{"max_new_tokens", std::uniform_int_distribution<int32_t>(1, 30)(rng)}};
  out.push_back(g);
  json m = base;
  m["algorithm"] = "multigen";
  m["multigen"] = {{"num_samples", std::uniform_int_distribution<int32_t>(1, 6)(rng)},
                   {"max_new_tokens", std::uniform_int_distribution<int32_t>(1, 20)(rng)},
                   {"method", std::vector<const char*>{"copy", "structured", "hybrid"}[rng() % 3]},
                   {"sampling", sampling}};
  out.push_back(m);
  return out;
}

}  // namespace triescope::testing
