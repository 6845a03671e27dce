// The CUDA backend's beam selection as the host runtime counts it
// (launch_stats(), cuda/host_runtime): a decode on --backend cuda-emu plans a
// cuda::DeviceSelector with the sample's beam width and ranks every step with
// the radix top-k (one chunk launch of rows x row_chunks blocks and one merge
// launch per step) after one log-normaliser launch of one block a row (the
// reference's pass, cuda/row_log_normaliser.cu; not the older device
// log-softmax), and its trace's records are the CPU's byte for byte. Host runtime only
// (label cuda_emu).
#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "core/common/file_io.h"
#include "core/decode/algorithm.h"
#include "core/decode/run_sample.h"
#include "core/decode/trie_beam_search.h"
#include "core/trace/trace.h"
#include "cuda/cuda_backend.h"
#include "cuda/device_selector.h"
#include "cuda/topk_candidates.cuh"
#include "launch_stats_util.h"
#include "trace_util.h"
#include "triescope_cuda_host/control.h"

using namespace triescope;
namespace host = triescope::cuda_host;
using triescope::testing::launches_of;

namespace {

// samples/<name>.json with beam.max_new_tokens = tokens (and model.vocab_size
// = vocab when given), written beside the build's other test files (a
// constraint file it names is copied too).
std::string shortened_sample(const std::string& name, int32_t tokens, int32_t vocab = 0) {
  const std::string src = std::string(TRIESCOPE_SOURCE_DIR) + "/samples/" + name + ".json";
  json j = json::parse(file_read_all(src));
  j["beam"]["max_new_tokens"] = tokens;
  if (vocab > 0) j["model"]["vocab_size"] = vocab;
  const std::filesystem::path dir = std::filesystem::path(TRIESCOPE_BINARY_DIR) / "tests" / "cuda" / "selector_structure";
  std::filesystem::create_directories(dir);
  if (j.contains("constraint") && j["constraint"].contains("file")) {
    const std::string f = j["constraint"]["file"].get<std::string>();
    std::filesystem::copy_file(std::string(TRIESCOPE_SOURCE_DIR) + "/samples/" + f, dir / f,
                               std::filesystem::copy_options::overwrite_existing);
  }
  const std::string out = (dir / (name + "_" + std::to_string(vocab) + ".json")).string();
  std::ofstream(out) << j.dump(2);
  return out;
}

// Every record but the header's backend and seams (the device's header says
// the selection ran there) and the summary's wall time.
void require_same_records(std::vector<json> cpu, std::vector<json> gpu) {
  REQUIRE(cpu.size() == gpu.size());
  REQUIRE(gpu.front().value("backend", std::string()) == cuda::kBackendName);
  REQUIRE(gpu.front().contains("seams"));
  REQUIRE(gpu.front()["seams"].value("selection", std::string()) == "device");
  CHECK_FALSE(cpu.front().contains("seams"));
  cpu.front().erase("backend");
  gpu.front().erase("backend");
  gpu.front().erase("seams");
  for (size_t i = 0; i < cpu.size(); ++i) {
    CAPTURE(i);
    if (cpu[i].value("kind", std::string()) == "summary") {
      cpu[i].erase("seconds");
      gpu[i].erase("seconds");
      for (json* m : {&cpu[i]["metrics"], &gpu[i]["metrics"]}) m->erase("seconds");
    }
    REQUIRE(cpu[i].dump() == gpu[i].dump());
  }
}

int32_t ranked_steps(const std::vector<json>& records) {
  int32_t n = 0;
  for (const json& r : records)
    if (r.value("kind", std::string()) == "step" && r.value("phase", std::string()) != "prefill") ++n;
  return n;
}

}  // namespace

TEST_CASE("selection structure: --backend cuda-emu ranks each beam step with the radix top-k at the sample's beam width",
          "[cuda_emu][structure][selector]") {
  // synthetic_long: 15 beams (k = 30) over 512 tokens (a step of 7,680
  // entries: one block), and the same over 4,096 tokens (chunks, then a merge)
  const int32_t vocab = GENERATE(512, 4096);
  CAPTURE(vocab);
  const std::string path = shortened_sample("synthetic_long", vocab == 512 ? 12 : 5, vocab);
  Sample cpu = sample_load(path), gpu = sample_load(path);
  cuda::sample_use_cuda(gpu);
  REQUIRE(gpu.options.make_selector);
  const auto probe = gpu.options.make_selector();
  REQUIRE(dynamic_cast<const cuda::DeviceSelector*>(probe.get()) != nullptr);
  require_same_records(testing::run_trace(cpu), testing::run_trace(gpu));  // the trie decode and its batch baseline

  // The trie decode alone, with the options the backend installed.
  host::reset_launch_stats();
  MemoryTraceSink sink;
  trie_beam_search(*gpu.model, gpu.prompt, gpu.config_as<BeamSection>().beam, &sink, gpu.options, nullptr);
  const int32_t steps = ranked_steps(sink.records);
  const auto single = launches_of("topk_single_kernel");
  const auto chunk = launches_of("topk_chunk_kernel");
  const auto merge = launches_of("topk_merge_kernel");
  CAPTURE(steps);
  REQUIRE(steps >= 2);
  CHECK(single.size() + merge.size() == static_cast<size_t>(steps));  // one ranking a step
  CHECK(chunk.size() == merge.size());
  const auto normaliser = launches_of("row_log_normaliser_kernel");
  CHECK(normaliser.size() == static_cast<size_t>(steps));  // one a ranking, one block a row
  for (const auto& m : normaliser) CHECK((m.blocks >= 1u && m.blocks <= 15u));
  CHECK(launches_of("lse_partial_kernel").empty());  // not the older device log-softmax
  CHECK(launches_of("log_softmax_write_kernel").empty());
  for (const auto& m : single) CHECK(m.blocks == 1u);
  for (const auto& m : merge) CHECK(m.blocks == 1u);
  if (vocab == 512) {
    CHECK(chunk.empty());
  } else {  // the prefill's one row fits one block; then 15 rows of 4,096, split to fill the chip
    CHECK(single.size() == 1u);
    REQUIRE(!chunk.empty());
    CHECK(chunk.back().blocks == static_cast<uint64_t>(15 * cuda::row_chunks(15, 4096)));
  }
}

TEST_CASE("selection structure: a dense STATIC step ranks its masked log-probs on the device", "[cuda_emu][structure][selector]") {
  const std::string path = shortened_sample("static_constrained_beam", 4);  // 8 x 256 entries: one block
  Sample cpu = sample_load(path), gpu = sample_load(path);
  cuda::sample_use_cuda(gpu);
  const auto want = testing::run_trace(cpu);
  host::reset_launch_stats();
  const auto got = testing::run_trace(gpu);
  require_same_records(want, got);
  // 8 beams over 256 tokens: the dense levels rank every row's masked
  // log-probs with the radix top-k (the sparse levels rank on the host's
  // StaticStep), in the trie decode and in its batch baseline.
  const auto rankings = launches_of("topk_single_kernel").size();
  CHECK(rankings > 0);
  CHECK(rankings <= 2 * static_cast<size_t>(ranked_steps(got)));
  CHECK(launches_of("topk_merge_kernel").empty());
}
