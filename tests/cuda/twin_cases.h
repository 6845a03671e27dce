// The twin-case registry: every kernel comparison of tests/cuda as one case
// (its inputs, its CPU twin, its launchers, an exact comparison), run by one
// runner (test_twin_cases.cpp) on each execution the binary has. The model is
// ggml's test-backend-ops; the rule is docs/conventions.md "The CPU is the
// oracle". A case file registers its cases at static initialisation:
//
//   const bool registered = twin_register(TwinSpec<In, Out>{.name = ..., .kernel = "cuda/x.cu", ...});
#pragma once
#include <cstdint>
#include <deque>
#include <functional>
#include <random>
#include <source_location>
#include <string>
#include <utility>
#include <vector>

namespace triescope::testing {

// Where a case's kernel side runs.
enum class TwinExecution {
  host_twin,     // the device code compiled as host C++: a __host__ __device__ block body, a host-run plan
  host_runtime,  // the .cu launched on the host runtime (cuda-emu): triescope_tests_cuda_emu
  gpu,           // the .cu built by nvcc and launched on a GPU: triescope_tests_cuda (exit 77 without one)
};
const char* twin_execution_name(TwinExecution e);

// One run of a case: its execution, one of its shapes, a variant, the block
// size of a host-twin run (1 where the twin has no block), and the seed its
// inputs are drawn from (printed; TRIESCOPE_TEST_SEED reproduces it).
struct TwinPoint {
  TwinExecution exec = TwinExecution::host_twin;
  std::vector<int64_t> shape;
  int32_t variant = 0;
  int32_t threads = 1;
  uint64_t seed = 0;
  bool on_host() const { return exec == TwinExecution::host_twin; }
};

// A registered case, its types erased: run(point) draws the inputs, runs the
// CPU twin and the point's execution, and compares with Catch2 assertions.
struct TwinCase {
  std::string name;
  std::string kernel;  // the source whose code the launchers run, e.g. "cuda/kv_compact.cu"
  std::string tags;    // Catch2 tags, e.g. "[kv]"
  std::vector<std::vector<int64_t>> shapes;
  int32_t host_variants = 0;  // variants per shape on the host twin; 0: the case has no host-twin execution
  std::vector<int32_t> host_threads;
  int32_t device_variants = 0;  // variants per shape on the host runtime or a GPU; 0: none
  std::function<void(const TwinPoint&)> run;
  std::string file;
  int line = 0;
};

// The typed form a case file writes. `cpu` is the twin in core/ (or, where
// the old tests used one, a definition written in the case); `host_twin`
// gets the block size; `compare` sees the point (some checks hold only for
// one execution's input sizes).
template <class In, class Out>
struct TwinSpec {
  std::string name{}, kernel{}, tags{};
  std::vector<std::vector<int64_t>> shapes{{0}};
  int32_t host_variants = 0;
  std::vector<int32_t> host_threads{1};
  int32_t device_variants = 0;
  std::function<In(std::mt19937_64& rng, const TwinPoint& pt)> inputs{};
  std::function<Out(const In& in)> cpu{};
  std::function<Out(const In& in, int32_t threads)> host_twin{};  // none: no host-twin execution
  std::function<Out(const In& in)> device{};                      // none: no device execution
  std::function<void(const TwinPoint& pt, const In& in, const Out& want, const Out& got)> compare{};
};

// A uniform integer in [lo, hi]: the cases' random shapes and values.
template <class T>
T draw(std::mt19937_64& rng, T lo, T hi) {
  return std::uniform_int_distribution<T>(lo, hi)(rng);
}
// Entry i of a point's shape.
inline int32_t dim(const TwinPoint& pt, size_t i) { return static_cast<int32_t>(pt.shape.at(i)); }

// Every case, in registration order (addresses are stable).
const std::deque<TwinCase>& twin_cases();
// Adds a case and hands it to the runner of this binary.
void twin_case_add(TwinCase c);
// Defined by the runner (test_twin_cases.cpp): registers this binary's Catch2 tests of `c`.
void twin_runner_register(const TwinCase& c);

template <class In, class Out>
bool twin_register(TwinSpec<In, Out> s, std::source_location where = std::source_location::current()) {
  TwinCase c;
  c.name = s.name;
  c.kernel = s.kernel;
  c.tags = s.tags;
  c.shapes = s.shapes;
  c.host_variants = s.host_twin ? s.host_variants : 0;
  c.host_threads = s.host_threads;
  c.device_variants = s.device ? s.device_variants : 0;
  c.file = where.file_name();
  c.line = static_cast<int>(where.line());
  c.run = [s = std::move(s)](const TwinPoint& pt) {
    std::mt19937_64 rng(pt.seed);
    const In in = s.inputs(rng, pt);
    const Out want = s.cpu(in);
    const Out got = pt.on_host() ? s.host_twin(in, pt.threads) : s.device(in);
    s.compare(pt, in, want, got);
  };
  twin_case_add(std::move(c));
  return true;
}

}  // namespace triescope::testing
