// The decode step's host waits on the device (issue 33, items 2 and 5):
// every device-to-host copy and stream synchronisation in cuda/ goes through
// cuda/host_waits.h (scripts/check_host_waits.py holds that), so counting
// them between two model forwards of a trie (or batch) beam search on the
// CUDA backend measures what one decode step makes the host wait for.
//
// The goal: one wait a step and O(b) bytes read back (the selector's packed
// answer: three statuses, the count, 2b scores and 2b indices). The mask
// builder leaves its rows on the device for the model
// (StepInput::mask_device), the model leaves its logits there for the
// selector (StepInput::logits_may_stay_on_device), and both their kernel
// statuses ride back with the selector's answer, as does a compaction's (the
// trie's GC, the batch's reorder). Only a step on which a device buffer grows
// (the mask table, the model's KV cache) waits once more.
#include <catch2/catch.hpp>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "core/config/json_reader.h"
#include "core/decode/run_sample.h"
#include "core/decode/batch_beam_search.h"
#include "core/decode/beam_config.h"
#include "core/decode/trie_beam_search.h"
#include "core/model/decode_buckets.h"
#include "cuda/cuda_backend.h"
#include "cuda/cuda_synthetic_model.h"
#include "cuda/host_waits.h"
#include "counting_model.h"
#include "hypotheses_check.h"

using namespace triescope;

namespace {

using testing::CountingModel;

struct StepWaits {
  int32_t step;
  cuda::HostWaitCounts waits;  // from the feed before this step's selection to the next feed
};

// synthetic_long (b = 15, |V| = 512, GC every 16 steps) cut to 40 steps,
// with the CUDA backend's model and seams and no trace (a trace's mask rows
// need the host), as trie or batch beam search: the waits of decode steps
// 2 .. 40, each from the feed before its selection to the next feed (GC and
// the batch's reorder included: a compaction's status rides with the next
// forward's). The hypotheses must be the CPU reference's, bit for bit.
std::vector<StepWaits> decode_step_waits(bool trie, int32_t* num_beams, cuda::CudaSyntheticModel::CapturedForwards* captured = nullptr) {
  json j = json_load_file(std::string(TRIESCOPE_SOURCE_DIR) + "/samples/synthetic_long.json");
  j["beam"]["max_new_tokens"] = 40;
  const std::filesystem::path tmp = std::filesystem::temp_directory_path() / "triescope_step_budget_sample.json";
  std::ofstream(tmp) << j.dump();
  Sample s = sample_load(tmp.string());
  Sample ref = sample_load(tmp.string());
  std::filesystem::remove(tmp);
  cuda::sample_use_cuda(s);
  const BeamConfig cfg = BeamConfig::from_json(JsonObjectReader(j["beam"], "beam"), s.model->vocab_size());
  *num_beams = cfg.num_beams;
  const auto decode = trie ? trie_beam_search : batch_beam_search;
  CountingModel model(*s.model);
  const DecodeResult r = decode(model, s.prompt, cfg, nullptr, s.options, nullptr);
  REQUIRE(r.metrics.steps == 40);
  REQUIRE(model.at.size() == 40);  // the prefill, then steps 1 .. 39 feed
  // Trie: every decode feed's mask rows stay on the device (the prefill's come
  // back with its last logits row); the batch layout's mask is built on the host.
  CHECK(model.device_mask_steps == (trie ? 39 : 0));
  CHECK(model.device_logits_steps == 39);  // every decode feed's; the prefill's last row comes to the host
  testing::check_same_hypotheses(r, decode(*ref.model, ref.prompt, cfg, nullptr, ref.options, nullptr));
  model.at.push_back(cuda::host_wait_counts());
  const auto* device_model = dynamic_cast<const cuda::CudaSyntheticModel*>(s.model.get());
  REQUIRE(device_model != nullptr);
  if (captured) *captured = device_model->captured_forwards();
  std::vector<StepWaits> out;
  for (size_t i = 1; i + 1 < model.at.size(); ++i)  // [at[i], at[i + 1]): step i's feed, step i + 1's selection
    out.push_back({static_cast<int32_t>(i) + 1, model.at[i + 1] - model.at[i]});
  return out;
}

// One download of the selector's answer (three statuses, the count, 2b
// scores, 2b indices) and one wait a step; a step on which a device buffer
// grows (the mask table, the KV cache) waits once more.
void check_one_wait_a_step(const std::vector<StepWaits>& steps, int32_t b, int max_growth_steps) {
  const int64_t answer = 8 * (7 + 2 * 2 * b);
  int growth_steps = 0;
  for (const StepWaits& s : steps) {
    CAPTURE(s.step, s.waits.syncs, s.waits.downloads, s.waits.download_bytes);
    CHECK(s.waits.downloads == 1);
    CHECK(s.waits.download_bytes == answer);
    CHECK(s.waits.syncs >= 1);
    CHECK(s.waits.syncs <= 2);
    growth_steps += s.waits.syncs == 2;
  }
  CHECK(growth_steps <= max_growth_steps);
}

}  // namespace

TEST_CASE("step budget: a trie decode step on the CUDA backend waits once and reads back O(b) bytes", "[step_budget]") {
  int32_t b = 0;
  const auto steps = decode_step_waits(true, &b);
  // The mask table doubles from 256 rows, the KV cache from 256 slots: each
  // at most twice in 40 steps of 15 beams.
  check_one_wait_a_step(steps, b, 4);
}

TEST_CASE("step budget: a batch beam search step on the CUDA backend waits once too (its logits stay on the device)", "[step_budget]") {
  int32_t b = 0;
  const auto steps = decode_step_waits(false, &b);
  check_one_wait_a_step(steps, b, 0);  // the batch layout's B x (prompt + 40) slots are there from the prefill
}

// Issue 33, item 3: each decode forward is padded to a bucket of query counts
// (core/model/decode_buckets.h) and replays a CUDA graph captured for that
// bucket, so the shapes the model runs come from a fixed set; the prefill
// (its last logits row comes back to the host) runs eagerly. A graph is
// captured again only when the buffers it names move: the cache's growth,
// or the swap of the cache with its spare at a garbage collection.
TEST_CASE("step budget: decode forwards replay a graph captured per bucket of query counts", "[step_budget]") {
  int32_t b = 0;
  cuda::CudaSyntheticModel::CapturedForwards captured;
  decode_step_waits(true, &b, &captured);
  int64_t replays = 0;
  for (const auto& [bucket, n] : captured.replays_by_bucket) {
    CAPTURE(bucket, n);
    CHECK(std::find(kDecodeBuckets.begin(), kDecodeBuckets.end(), bucket) != kDecodeBuckets.end());
    CHECK(bucket >= b);  // b leaves a step until beams finish: 15 -> 16
    replays += n;
  }
  CHECK(replays == 39);  // every decode feed of the 40 steps
  CHECK(captured.captures >= 1);
  CHECK(captured.captures <= 4);  // first use, the spare cache after a GC, and after each growth
}
