// Lookahead decoding on real attention: the candidates, the Jacobi window and
// the pending token share one forward pass through the ancestor mask, so the
// output must still be greedy decoding, token for token.
#include <catch2/catch.hpp>

#include "core/decode/greedy_decode.h"
#include "core/decode/lookahead.h"
#include "torch_test_util.h"

using namespace triescope;
using namespace triescope::test;

TEST_CASE("lookahead on the transformer equals greedy decoding", "[model][lookahead]") {
  const uint32_t seed = GENERATE(1u, 2u, 3u);
  const int prompt_kind = GENERATE(0, 1);  // random, repetitive
  const auto verify = GENERATE(LookaheadVerify::independent, LookaheadVerify::trie);
  CAPTURE(seed, prompt_kind, static_cast<int>(verify));
  const LlamaConfig c = tiny_config(4, 2, 48);
  auto model = tiny_model(c, seed);
  std::vector<int32_t> prompt;
  for (int32_t i = 0; i < 18; ++i)
    prompt.push_back(prompt_kind == 0 ? static_cast<int32_t>((seed * 131u + static_cast<uint32_t>(i) * 17u) % 48u) : (i % 5) + 3);
  const LookaheadResult g = greedy_decode(*model, prompt, 40);
  const LookaheadConfig cfg = test_lookahead_config(40, verify);
  const LookaheadResult la = lookahead_decode(*model, prompt, cfg);
  REQUIRE(la.tokens == g.tokens);
  CHECK(la.metrics.steps <= g.metrics.steps + 1);
}
