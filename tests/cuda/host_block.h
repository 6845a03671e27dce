// A CUDA block on the host for the __host__ __device__ block bodies of
// cuda/dsbd_verify.h and cuda/lookahead_verify.h: one thread runs them as
// cuda::SerialBlock; more are real host threads whose sync() is a
// std::barrier, where the kernel calls __syncthreads().
#pragma once
#include <barrier>
#include <cstdint>
#include <thread>
#include <vector>

#include "cuda/philox.cuh"

namespace triescope::testing {

struct BarrierBlock {
  int64_t t;
  int64_t n;
  std::barrier<>* bar;
  int64_t tid() const { return t; }
  int64_t size() const { return n; }
  void sync() { bar->arrive_and_wait(); }
};

template <class F>
void run_block(int64_t n, F body) {
  if (n == 1) {
    cuda::SerialBlock b;
    body(b);
    return;
  }
  std::barrier<> bar(n);
  std::vector<std::thread> ts;
  for (int64_t t = 0; t < n; ++t)
    ts.emplace_back([&, t] {
      BarrierBlock b{t, n, &bar};
      body(b);
    });
  for (auto& th : ts) th.join();
}

}  // namespace triescope::testing
