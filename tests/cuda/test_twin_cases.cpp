// The runner of the twin cases (twin_cases.h): one Catch2 test per case and
// execution this binary has ("twin case on <execution>: <name>", the case's
// tags plus [twin]), one section per shape, block size and variant, each on
// its own printed seed. The kernel test binaries (TRIESCOPE_TWIN_DEVICE_RUNNER)
// run the device execution: the host runtime where they link
// triescope_cuda_emu, a GPU where they link the nvcc build (skipped with exit
// 77 without one, by cuda_test_main.cpp); triescope_tests_cuda_twins runs the
// host twins, so the __host__ __device__ code is checked without any device.
#include <catch2/catch.hpp>

#include <filesystem>
#include <set>

#include "cuda/cuda_common.cuh"  // cuda_runtime_api.h: the host runtime's defines TRIESCOPE_CUDA_HOST_RUNTIME
#include "test_util.h"
#include "twin_cases.h"

namespace triescope::testing {

namespace {

constexpr TwinExecution kExecution =
#if !defined(TRIESCOPE_TWIN_DEVICE_RUNNER)
    TwinExecution::host_twin;
#elif defined(TRIESCOPE_CUDA_HOST_RUNTIME)
    TwinExecution::host_runtime;
#else
    TwinExecution::gpu;
#endif

int32_t variants_here(const TwinCase& c) { return kExecution == TwinExecution::host_twin ? c.host_variants : c.device_variants; }

// A case's seeds differ from every other case's: FNV-1a of its name.
uint64_t name_salt(const std::string& name) {
  uint64_t h = 0xcbf29ce484222325ull;
  for (const char ch : name) h = (h ^ static_cast<unsigned char>(ch)) * 0x100000001b3ull;
  return h;
}

void twin_case_run(const TwinCase& c) {
  const std::vector<int32_t> threads = kExecution == TwinExecution::host_twin ? c.host_threads : std::vector<int32_t>{1};
  uint64_t index = 0;
  for (const auto& shape : c.shapes)
    for (const int32_t t : threads)
      for (int32_t v = 0; v < variants_here(c); ++v, ++index) {
        const TwinPoint pt{kExecution, shape, v, t, test_seed(name_salt(c.name) + index)};
        DYNAMIC_SECTION("shape " << Catch::Detail::stringify(shape) << ", threads " << t << ", variant " << v) {
          CAPTURE(c.kernel, shape, t, v, pt.seed);
          c.run(pt);
        }
      }
}

struct TwinInvoker : Catch::ITestInvoker {
  const TwinCase* c;
  explicit TwinInvoker(const TwinCase* x) : c(x) {}
  void invoke() const override { twin_case_run(*c); }
};

}  // namespace

void twin_runner_register(const TwinCase& c) {
  if (variants_here(c) == 0) return;
  const std::string name = std::string("twin case on ") + twin_execution_name(kExecution) + ": " + c.name;
  const std::string tags = c.tags + "[twin]";
  // Catch copies the name and tags; the file name stays in the registry's (stable) case.
  Catch::AutoReg reg(new TwinInvoker(&c), Catch::SourceLineInfo(c.file.c_str(), static_cast<std::size_t>(c.line)), Catch::StringRef(),
                     Catch::NameAndTags(name, tags));
}

}  // namespace triescope::testing

using namespace triescope::testing;

TEST_CASE("every twin case names an existing kernel source and runs here or on another execution", "[twin]") {
  REQUIRE(!twin_cases().empty());
  std::set<std::string> names;
  for (const TwinCase& c : twin_cases()) {
    CAPTURE(c.name, c.kernel);
    CHECK(names.insert(c.name).second);
    CHECK(std::filesystem::is_regular_file(std::filesystem::path(TRIESCOPE_SOURCE_DIR) / c.kernel));
    CHECK(c.host_variants + c.device_variants > 0);
    CHECK(!c.shapes.empty());
  }
}
