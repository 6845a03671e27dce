// parallel_rows (core/common): every row exactly once on any thread count,
// the lowest failing row's exception after all rows ran, concurrent callers,
// a named error for a bad TRIESCOPE_HOST_THREADS; and log_softmax_rows, its
// use in the beam step, bit for bit equal to the one-thread loop.
#include <catch2/catch.hpp>

#include <atomic>
#include <cstdlib>
#include <cstring>
#include <random>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "core/common/error.h"
#include "core/common/parallel_rows.h"
#include "core/select/log_normaliser.h"

using namespace triescope;

TEST_CASE("parallel_rows calls every row exactly once on any thread count", "[parallel]") {
  for (int32_t threads : {0, 1, 2, 3, 8, 40})
    for (int32_t n : {0, 1, 2, 7, 64, 1000}) {
      std::vector<std::atomic<int>> calls(static_cast<size_t>(n));
      parallel_rows(n, [&](int32_t i) { calls[static_cast<size_t>(i)].fetch_add(1); }, threads);
      CAPTURE(threads, n);
      for (int32_t i = 0; i < n; ++i) CHECK(calls[static_cast<size_t>(i)].load() == 1);
    }
}

TEST_CASE("parallel_rows rethrows the lowest failing row's exception once every row ran", "[parallel]") {
  for (int32_t threads : {1, 4}) {
    std::vector<std::atomic<int>> calls(200);
    std::string what;
    try {
      parallel_rows(
          200,
          [&](int32_t i) {
            calls[static_cast<size_t>(i)].fetch_add(1);
            if (i == 37 || i == 150) throw std::runtime_error("row " + std::to_string(i));
          },
          threads);
    } catch (const std::runtime_error& e) {
      what = e.what();
    }
    CAPTURE(threads);
    CHECK(what == "row 37");
    for (const auto& c : calls) CHECK(c.load() == 1);
  }
}

TEST_CASE("parallel_rows from several threads at once: each caller's rows all done", "[parallel]") {
  std::vector<std::thread> callers;
  std::atomic<int> wrong{0};
  for (int c = 0; c < 4; ++c)
    callers.emplace_back([&wrong, c] {
      for (int rep = 0; rep < 50; ++rep) {
        std::vector<int> out(300, -1);
        parallel_rows(300, [&](int32_t i) { out[static_cast<size_t>(i)] = i * (c + 1); }, 3);
        for (int i = 0; i < 300; ++i)
          if (out[static_cast<size_t>(i)] != i * (c + 1)) wrong.fetch_add(1);
      }
    });
  for (auto& t : callers) t.join();
  CHECK(wrong.load() == 0);
}

TEST_CASE("TRIESCOPE_HOST_THREADS: a count is used, anything else is an error naming it", "[parallel]") {
  const char* old = std::getenv(kHostThreadsEnv);
  const std::string saved = old ? old : "";
  ::setenv(kHostThreadsEnv, "3", 1);
  CHECK(parallel_rows_threads() == 3);
  ::setenv(kHostThreadsEnv, "4096", 1);
  CHECK(parallel_rows_threads() == 4096);
  // Signs, spaces and leading zeros are refused alike (strtol took " 4", "+4", "010", but not "4 ").
  for (const char* bad : {"0", "-2", "four", "3x", "100000", " 4", "+4", "010", "4 ", "4097"}) {
    ::setenv(kHostThreadsEnv, bad, 1);
    CAPTURE(bad);
    CHECK_THROWS_WITH(parallel_rows_threads(), Catch::Contains("TRIESCOPE_HOST_THREADS") && Catch::Contains(bad));
  }
  if (old) ::setenv(kHostThreadsEnv, saved.c_str(), 1);
  else ::unsetenv(kHostThreadsEnv);
  CHECK(parallel_rows_threads() >= 1);
}

TEST_CASE("log_softmax_rows equals log_softmax_row row by row, bit for bit, on any thread count", "[parallel][select]") {
  std::mt19937 rng(5);
  std::normal_distribution<float> n(0.0f, 4.0f);
  const int32_t rows = 15, vocab = 32000;
  std::vector<float> logits(static_cast<size_t>(rows) * vocab);
  for (float& x : logits) x = n(rng);
  logits[5] = -std::numeric_limits<float>::infinity();
  std::vector<const float*> ptrs;
  for (int32_t r = rows - 1; r >= 0; --r) ptrs.push_back(logits.data() + static_cast<size_t>(r) * vocab);  // any row order
  std::vector<double> want(logits.size());
  for (int32_t i = 0; i < rows; ++i) log_softmax_row(ptrs[static_cast<size_t>(i)], vocab, want.data() + static_cast<size_t>(i) * vocab);
  for (int32_t threads : {0, 1, 2, 7}) {
    std::vector<double> got(logits.size(), 1.0);
    log_softmax_rows(ptrs, vocab, got.data(), threads);
    CAPTURE(threads);
    CHECK(std::memcmp(got.data(), want.data(), sizeof(double) * want.size()) == 0);
  }
}
