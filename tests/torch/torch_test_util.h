// Helpers shared by the transformer tests: tiny configs, a causal run of one
// path in a fresh cache (the reference every tree result is compared with).
#pragma once
#include <algorithm>
#include <cmath>
#include <memory>
#include <numeric>
#include <random>
#include <vector>

#include <catch2/catch.hpp>

#include "core/decode/decode_result.h"
#include "core/decode/lookahead.h"
#include "core/mask/ancestor_mask.h"
#include "core/model/torch/torch_transformer.h"
#include "core/tree/token_tree.h"

namespace triescope::test {
using json = nlohmann::json;
// GPT-2's byte alphabet, written out independently of the tokenizer's table.
inline std::string byte_char(int b) {
  static std::vector<std::string> table = [] {
    std::vector<int> cps(256, -1);
    for (int x = 33; x <= 126; ++x) cps[x] = x;
    for (int x = 161; x <= 172; ++x) cps[x] = x;
    for (int x = 174; x <= 255; ++x) cps[x] = x;
    int n = 0;
    for (int x = 0; x < 256; ++x)
      if (cps[x] < 0) cps[x] = 256 + n++;
    std::vector<std::string> t;
    for (int cp : cps) {
      std::string s;
      if (cp < 0x80) {
        s += static_cast<char>(cp);
      } else {
        s += static_cast<char>(0xc0 | (cp >> 6));
        s += static_cast<char>(0x80 | (cp & 0x3f));
      }
      t.push_back(s);
    }
    return t;
  }();
  return table[static_cast<size_t>(b)];
}

inline json small_tokenizer(bool digits = false) {
  json vocab = json::object();
  for (int b = 0; b < 256; ++b) vocab[byte_char(b)] = b;
  const std::string G = byte_char(' ');  // "Ġ"
  const std::vector<std::pair<std::string, std::string>> merges = {
      {G, "t"}, {"h", "e"}, {G + "t", "he"}, {"e", "r"}, {G, "w"}, {"o", "r"}, {G + "w", "or"}, {"l", "d"},
      {G + "wor", "ld"}, {"1", "2"}, {byte_char(0xc3), byte_char(0xa9)}};  // the last: the bytes of "é"
  json m = json::array();
  int id = 256;
  for (const auto& [a, b] : merges) {
    m.push_back(a + " " + b);
    vocab[a + b] = id++;
  }
  // Reserved entries up to 300, so the added tokens get ids 300 and 301 the
  // way tokenizers numbers them (after the vocabulary).
  for (; id < 300; ++id) vocab["<|reserved_" + std::to_string(id) + "|>"] = id;
  json pre = json{{"type", "ByteLevel"}, {"add_prefix_space", false}, {"use_regex", true}};
  if (digits) pre = {{"type", "Sequence"}, {"pretokenizers", {{{"type", "Digits"}, {"individual_digits", true}}, pre}}};
  return {{"version", "1.0"},
          {"added_tokens",
           {{{"id", 300}, {"content", "<|endoftext|>"}, {"special", true}},
            {{"id", 301}, {"content", "<|im_start|>"}, {"special", true}}}},
          {"pre_tokenizer", pre},
          {"decoder", {{"type", "ByteLevel"}}},
          {"model", {{"type", "BPE"}, {"vocab", vocab}, {"merges", m}}}};
}
}  // namespace triescope::test

namespace triescope::test {

inline LlamaConfig tiny_config(int32_t heads = 4, int32_t kv_heads = 2, int32_t vocab = 96, bool tied = false,
                               int32_t layers = 2, int32_t hidden = 32) {
  LlamaConfig c;
  c.vocab_size = vocab;
  c.hidden_size = hidden;
  c.intermediate_size = 2 * hidden + 8;
  c.num_hidden_layers = layers;
  c.num_attention_heads = heads;
  c.num_key_value_heads = kv_heads;
  c.head_dim = hidden / heads;
  c.rms_norm_eps = 1e-6;
  c.rope_theta = 10000.0;
  c.tie_word_embeddings = tied;
  return c;
}

// init_std 0.2 (not HF's 0.02) so attention is far from uniform and a wrong
// mask bit or position moves the logits well past the 1e-4 tolerance.
inline std::unique_ptr<TorchTransformer> tiny_model(const LlamaConfig& c, uint64_t seed, const std::string& attention = "auto",
                                                    double init_std = 0.2) {
  TransformerOptions o;
  o.attention = attention;
  return std::make_unique<TorchTransformer>(c, llama_random_weights(c, seed, init_std), o);
}

// Logits of every position of `tokens` run alone, causally, from position 0.
inline Logits run_causal(Model& m, const std::vector<int32_t>& tokens) {
  m.reset();
  StepInput in;
  const auto n = static_cast<int32_t>(tokens.size());
  in.num_slots = n;
  in.mask.reset(n, n);
  for (int32_t i = 0; i < n; ++i) {
    in.tokens.push_back(tokens[static_cast<size_t>(i)]);
    in.positions.push_back(i);
    in.slots.push_back(i);
    for (int32_t j = 0; j <= i; ++j) in.mask.set(i, j);
  }
  Logits out;
  m.forward(in, out);
  return out;
}

// Random forest: each node hangs under a uniformly chosen earlier node, or
// (rarely) starts a new root, so depths, fan-outs and siblings all vary.
inline TokenTree random_tree(std::mt19937& rng, int32_t nodes, int32_t vocab) {
  TokenTree t;
  std::uniform_int_distribution<int32_t> tok(0, vocab - 1);
  t.add_root(tok(rng));
  for (int32_t i = 1; i < nodes; ++i) {
    if (rng() % 16 == 0) {
      t.add_root(tok(rng));
    } else {
      const int32_t parent = static_cast<int32_t>(rng() % static_cast<uint32_t>(i));
      t.add_child(parent, tok(rng), 0.0);
    }
  }
  return t;
}

// Every node of `t` fed at once, node i in slot i at its depth, with its
// ancestor-mask row (a tree whose ids are its slots).
inline StepInput all_nodes_input(const TokenTree& t, int32_t nodes) {
  std::vector<int32_t> all(static_cast<size_t>(nodes));
  std::iota(all.begin(), all.end(), 0);
  StepInput in;
  for (int32_t id : all) {
    in.tokens.push_back(t.node(id).token);
    in.positions.push_back(t.node(id).depth);
    in.slots.push_back(id);
  }
  in.num_slots = nodes;
  in.mask = ancestor_mask_build(t, all, nodes);
  return in;
}

// One forward over `order` (node ids; slot k holds order[k]) after the
// nodes of `written` were already fed. Returns logits rows in `order`'s order.
inline Logits forward_nodes(Model& m, TokenTree& t, const std::vector<int32_t>& order, int32_t first_slot, bool use_flat_positions = false) {
  StepInput in;
  for (size_t k = 0; k < order.size(); ++k) {
    auto& nd = t.node(order[k]);
    nd.slot = first_slot + static_cast<int32_t>(k);
    in.tokens.push_back(nd.token);
    in.positions.push_back(use_flat_positions ? first_slot + static_cast<int32_t>(k) : nd.depth);
    in.slots.push_back(nd.slot);
  }
  in.num_slots = first_slot + static_cast<int32_t>(order.size());
  in.mask = ancestor_mask_build(t, order, in.num_slots);
  Logits out;
  m.forward(in, out);
  return out;
}

inline float max_abs_diff(const float* a, const float* b, int32_t n) {
  float d = 0.0f;
  for (int32_t i = 0; i < n; ++i) d = std::max(d, std::fabs(a[i] - b[i]));
  return d;
}

// The lookahead settings of the transformer tests: window W = 5, n-grams of
// N = 4, G = 4 candidates, merged into a trie of depth D = 3 and B = 12 nodes.
inline LookaheadConfig test_lookahead_config(int32_t max_new_tokens, LookaheadVerify verify) {
  LookaheadConfig cfg;
  cfg.max_new_tokens = max_new_tokens;
  cfg.window = 5;
  cfg.ngram = 4;
  cfg.max_candidates = 4;
  cfg.trie_depth = 3;
  cfg.trie_nodes = 12;
  cfg.verify = verify;
  return cfg;
}

// Two decodes' hypotheses: the same count, each the same tokens, the scores within `tol`.
inline void check_hypotheses_close(const DecodeResult& got, const DecodeResult& want, double tol) {
  REQUIRE(got.hypotheses.size() == want.hypotheses.size());
  for (size_t i = 0; i < want.hypotheses.size(); ++i) {
    CAPTURE(i);
    CHECK(got.hypotheses[i].tokens == want.hypotheses[i].tokens);
    CHECK(std::fabs(got.hypotheses[i].score - want.hypotheses[i].score) <= tol);
  }
}

}  // namespace triescope::test
