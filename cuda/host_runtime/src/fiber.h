// Fibers for the executor's default mode: a stack per CUDA thread and a
// context switch that saves only the callee-saved registers (x86-64: a few
// instructions; elsewhere ucontext). A fiber switches straight to the next
// one, without a round trip through a scheduler. Not for sanitizer builds:
// those run the executor's threads mode.
#pragma once
#include <cstddef>

#if !defined(__x86_64__)
#include <ucontext.h>
#endif

namespace triescope::cuda_host {

// A saved execution context: a fiber's, or the OS thread's own.
struct FiberContext {
  void* sp = nullptr;
#if !defined(__x86_64__)
  ucontext_t uc{};
#endif
};

// Saves the running context into `from` and continues `to`.
void fiber_switch(FiberContext& from, FiberContext& to);

class FiberStack {
 public:
  explicit FiberStack(size_t bytes);
  ~FiberStack();
  FiberStack(const FiberStack&) = delete;
  FiberStack& operator=(const FiberStack&) = delete;
  // Makes `ctx` start entry(arg) at the top of this stack when switched to.
  // entry must never return (it switches away for good instead).
  void prepare(FiberContext& ctx, void (*entry)(void*), void* arg);

 private:
  void* base_ = nullptr;  // mmap'd, lowest page a guard
  size_t bytes_ = 0;
};

}  // namespace triescope::cuda_host
