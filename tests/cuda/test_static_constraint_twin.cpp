// The cuda backend's STATIC index (cuda::StaticIndexCuda) with the kernel's
// row algorithm run on the host (VerifyExec::host_twin: the same
// cuda/static/static_mask_rows.h functions the kernel runs, and the same host
// bookkeeping the device path uses) in whole decodes: every STATIC sample and
// random constrained decodes, whose traces must equal the CPU reference's.
// Its masks, valid counts, rows read and next states against core's
// VntkIndex are a twin case (twin_cases_static.cpp).
#include <catch2/catch.hpp>

#include <filesystem>

#include "core/config/json_reader.h"
#include "core/decode/run_sample.h"
#include "cuda/cuda_backend.h"
#include "static_index_check.h"
#include "trace_util.h"

using namespace triescope;
using namespace triescope::testing;

TEST_CASE("static index (cuda, host run): constrained trie and batch decodes give the CPU's traces", "[cuda][constraint]") {
  const uint64_t variant = GENERATE(range(0, 16));
  const uint64_t seed = test_seed(71000 + variant);
  CAPTURE(base_seed(), seed);
  check_static_decodes(cuda::VerifyExec::host_twin, seed);
}

TEST_CASE("static index (cuda, host run): every STATIC sample's trace equals the CPU's, as trie and as batch", "[cuda][constraint]") {
  const std::vector<std::string> paths = sample_paths();
  int ran = 0;
  for (const auto& path : paths) {
    const json j = json_load_file(path);
    if (!j.contains("constraint") || j["constraint"].value("impl", std::string("vntk")) != "vntk") continue;
    for (const std::string algorithm : {"trie_beam_search", "batch_beam_search"}) {
      DYNAMIC_SECTION(path << " as " << algorithm) {
        Sample cpu = sample_load(path), twin = sample_load(path);
        cpu.algorithm = twin.algorithm = algorithm;
        twin.constraint = sample_constraint_from_json(JsonObjectReader(twin.raw.at("constraint"), path, "constraint"), twin.model->vocab_size(), path,
                                                      [](const ConstraintIndexRequest& r) { return cuda::constraint_index_make(r, cuda::VerifyExec::host_twin); });
        REQUIRE(twin.constraint);
        MemoryTraceSink a, b;
        std::ostringstream ra, rb;
        run_sample(cpu, &a, ra);
        run_sample(twin, &b, rb);
        const auto diff = trace_diff(a.records, b.records);
        INFO((diff ? diff->describe() : std::string("equivalent")));
        REQUIRE(!diff);
        REQUIRE(strip_seconds(a.records) == strip_seconds(b.records));
        REQUIRE(ra.str() == rb.str());  // the compliance line included
        REQUIRE(ra.str().find("(100%)") != std::string::npos);
        auto& idx = dynamic_cast<cuda::StaticIndexCuda&>(dynamic_cast<StaticConstraint&>(*twin.constraint).index());
        REQUIRE(idx.kernel_runs() > 0);
        REQUIRE(idx.fallback_runs() == 0);
      }
      ++ran;
    }
  }
  CHECK(ran >= 4);  // static_figure1 and static_constrained_beam at least
}

TEST_CASE("static index (cuda): only the VNTK index moves; baselines stay on the host", "[cuda][constraint]") {
  auto set = std::make_shared<const ConstraintSet>(constraint_set_random(50, 3, 20, 5));
  CHECK(dynamic_cast<cuda::StaticIndexCuda*>(cuda::constraint_index_make({"vntk", set, {}}, cuda::VerifyExec::host_twin).get()));
  for (const std::string impl : {"pointer_trie", "ppv_exact", "ppv_approx", "hash_bitmap"}) {
    CAPTURE(impl);
    const auto index = cuda::constraint_index_make({impl, set, {}}, cuda::VerifyExec::host_twin);
    CHECK(!dynamic_cast<cuda::StaticIndexCuda*>(index.get()));
    CHECK(index->name() == constraint_index_make(impl, set, {})->name());
  }
  // Sparse ranking runs the host StaticStep over the host VntkIndex, option and all.
  ConstraintIndexRequest request{"vntk", set, {}, 50, /*sparse_ranking=*/true};
  auto sparse = std::make_shared<StaticConstraint>(set, cuda::constraint_index_make(request, cuda::VerifyExec::host_twin), true);
  CHECK(!dynamic_cast<cuda::StaticIndexCuda*>(&sparse->index()));
  CHECK(sparse->describe().value("ranking", "") == "sparse");
}
