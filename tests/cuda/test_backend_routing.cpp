// cuda::sample_use_cuda's routing that needs no device: a transformer model
// object moved to device "cuda" (transformer_on_cuda), and transformer
// targets and drafts rebuilt from their sample's model object (not refused
// as "no CUDA twin"), every failure naming the sample file.
#include <catch2/catch.hpp>

#include "core/common/error.h"
#include "core/decode/run_sample.h"
#include "core/model/synthetic_model.h"
#include "cuda/cuda_backend.h"

using namespace triescope;

TEST_CASE("transformer_on_cuda: device cuda, attention auto unless the sample names one, the rest untouched", "[cuda][backend]") {
  // On the host runtime: device "cpu" (the kernel reads CPU tensors) and
  // attention "tree_kernel" in place of "auto".
  const std::string device = cuda::kEmulated ? "cpu" : "cuda", automatic = cuda::kEmulated ? "tree_kernel" : "auto";
  const json m = {{"type", "transformer"}, {"random_init", {{"vocab_size", 256}}}, {"seed", 7}, {"device", "cpu"}};
  const json c = cuda::transformer_on_cuda(m);
  CHECK(c["device"] == device);
  CHECK(c["attention"] == automatic);
  json rest = c;
  rest.erase("attention");
  rest["device"] = "cpu";
  CHECK(rest == m);
  for (const std::string a : {"dense", "gather", "tree_kernel", "auto"}) {
    json m2 = m;
    m2["attention"] = a;
    CHECK(cuda::transformer_on_cuda(m2)["attention"] == (a == "auto" ? automatic : a));
  }
}

TEST_CASE("sample_use_cuda rebuilds a transformer target and draft from the sample, naming the file on failure", "[cuda][backend]") {
  // This binary registers no "transformer" builder (no LibTorch), so the
  // rebuild itself fails; what is checked is that it is attempted (not the
  // "no CUDA twin" refusal) and that the error names the file and field.
  const json tmodel = {{"type", "transformer"}, {"random_init", {{"vocab_size", 64}}}};
  {
    Sample s;
    s.path = "dir/my_transformer.json";
    s.algorithm = "trie_beam_search";
    s.raw = {{"model", tmodel}};
    s.model = std::make_unique<SyntheticModel>(SyntheticConfig{});
    CHECK_THROWS_WITH(cuda::sample_use_cuda(s), Catch::Contains("dir/my_transformer.json") && Catch::Contains("cuda backend: model: ") &&
                                                    !Catch::Contains("no CUDA twin"));
    // The file is named once, not again inside the model's own error.
    std::string message;
    try {
      cuda::sample_use_cuda(s);
    } catch (const Error& e) {
      message = e.what();
    }
    CAPTURE(message);
    CHECK(message.find("dir/my_transformer.json") == 0);
    CHECK(message.find("dir/my_transformer.json", 1) == std::string::npos);
    CHECK(s.options.backend != "cuda");
  }
  {
    // The draft is built first, so its failure is the one reported (the
    // synthetic target would need a device).
    Sample s;
    s.path = "dir/mixed_draft.json";
    s.algorithm = "speculative";
    s.raw = {{"model", {{"type", "synthetic"}}}, {"draft_model", tmodel}};
    s.model = std::make_unique<SyntheticModel>(SyntheticConfig{});
    CHECK_THROWS_WITH(cuda::sample_use_cuda(s), Catch::Contains("dir/mixed_draft.json") && Catch::Contains("cuda backend: draft_model: "));
  }
  {
    Sample s;
    s.path = "dir/scripted_draft.json";
    s.algorithm = "dsbd";
    s.raw = {{"model", tmodel}, {"draft_model", {{"type", "scripted"}}}};
    s.model = std::make_unique<SyntheticModel>(SyntheticConfig{});
    CHECK_THROWS_WITH(cuda::sample_use_cuda(s), Catch::Contains("dir/scripted_draft.json") && Catch::Contains("draft_model type \"scripted\""));
  }
}
