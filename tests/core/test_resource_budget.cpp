// Resource limits before allocation (issue 27): in-range samples whose masks,
// logits or KV figures are too big are refused with a named error giving the
// size and the option, before anything is allocated. On 9ae4cdc the first
// ended in std::bad_alloc (exit 3), the second asked for 32 GiB of logits,
// the third overflowed int64 (UBSan, trie_beam_search.cpp:111).
#include <catch2/catch.hpp>

#include <cstdlib>
#include <sstream>

#include "core/common/error.h"
#include "core/common/resource_budget.h"
#include "core/config/json_reader.h"
#include "core/decode/run_sample.h"

using namespace triescope;

namespace {

// The budget for one test, whatever the machine's memory.
struct BudgetEnv {
  explicit BudgetEnv(const char* v) { ::setenv(kMemoryBudgetEnv, v, 1); }
  ~BudgetEnv() { ::unsetenv(kMemoryBudgetEnv); }
};

std::string run_error(json j) {
  try {
    Sample s = sample_parse(j, "big.json");
    std::ostringstream report;
    run_sample(s, nullptr, report);
  } catch (const Error& e) {
    return e.what();
  }
  return "no error";
}

json synthetic(const std::string& algorithm, int64_t vocab, int64_t beams, int64_t prompt_len, int64_t max_new) {
  json j = json_load_file(TRIESCOPE_SOURCE_DIR "/samples/synthetic_long.json");
  j["algorithm"] = algorithm;
  j["model"]["vocab_size"] = vocab;
  j["model"]["eos_token"] = vocab - 1;
  j["beam"] = {{"num_beams", beams}, {"max_new_tokens", max_new}, {"eos_token", vocab - 1}};
  std::vector<int32_t> prompt(static_cast<size_t>(prompt_len));
  for (size_t i = 0; i < prompt.size(); ++i) prompt[i] = static_cast<int32_t>(i % 97);
  j["prompt"] = prompt;
  j.erase("trace");
  return j;
}

}  // namespace

TEST_CASE("resource budget: 4096 beams over a 4096-token prompt in the batch layout are refused, named", "[beam][budget]") {
  const BudgetEnv env("8G");
  const std::string err = run_error(synthetic("batch_beam_search", 8192, 4096, 4096, 4));
  CHECK(err.rfind("batch beam search: the attention mask (", 0) == 0);
  CHECK_THAT(err, Catch::Contains("more than the memory budget of 8589934592 bytes (8.00 GiB; TRIESCOPE_MEMORY_BUDGET=BYTES changes it"));
}

TEST_CASE("resource budget: a 2^20 vocabulary with 4096 beams asks 32 GiB of logits, refused", "[beam][budget]") {
  const BudgetEnv env("8G");
  CHECK(run_error(synthetic("trie_beam_search", 1 << 20, 4096, 8, 1)) ==
        "trie beam search: the logits (8589934592 floats) needs 34359738368 bytes (32.00 GiB), more than the memory budget of 8589934592 "
        "bytes (8.00 GiB; TRIESCOPE_MEMORY_BUDGET=BYTES changes it, the default is half the machine's memory)");
}

TEST_CASE("resource budget: kv_shape at its maxima cannot overflow the KV byte figures", "[beam][budget]") {
  json j = synthetic("trie_beam_search", 512, 15, 64, 1 << 20);
  j["model"]["kv_shape"] = {{"layers", 1024}, {"kv_heads", 1024}, {"head_dim", 65536}, {"dtype_bytes", 8}};
  CHECK(run_error(j) ==
        "trie beam search: model.kv_shape's 1099511627776 bytes per slot x 15729600 slots (beam.num_beams x (prompt + "
        "beam.max_new_tokens)) = 17294878100265369600 bytes, past what a 64-bit byte count holds");
}

TEST_CASE("resource budget: the variable is read strictly", "[budget]") {
  {
    const BudgetEnv env("3M");
    CHECK(resource_budget_bytes() == 3 << 20);
  }
  {
    const BudgetEnv env("12X");
    CHECK_THROWS_WITH(resource_budget_bytes(), "TRIESCOPE_MEMORY_BUDGET=12X: must be a positive number of bytes, optionally with K, M, G or T");
  }
  {
    const BudgetEnv env("-5");
    CHECK_THROWS_AS(resource_budget_bytes(), Error);
  }
  CHECK(resource_budget_bytes() > 0);  // unset: half the machine's memory
  // A small budget refuses even a small decode, so the check is live.
  const BudgetEnv env("1K");
  CHECK_THAT(run_error(synthetic("trie_beam_search", 512, 15, 64, 16)), Catch::Contains("more than the memory budget of 1024 bytes"));
}
