// Fibers for the executor's default mode: a stack per CUDA thread and a
// context switch that saves only the callee-saved registers (x86-64: a few
// instructions; elsewhere ucontext). A fiber switches straight to the next
// one, without a round trip through a scheduler. Under ThreadSanitizer
// (TRIESCOPE_CUDA_HOST_TSAN_FIBERS) each fiber is a TSan fiber and switches
// create no happens-before: the executor annotates the barriers that do.
#pragma once
#include <cstddef>

#if !defined(__x86_64__)
#include <ucontext.h>
#endif

namespace triescope::cuda_host {

// A saved execution context: a fiber's, or the OS thread's own.
struct FiberContext {
  void* sp = nullptr;
  void* tsan = nullptr;  // the TSan fiber (TRIESCOPE_CUDA_HOST_TSAN_FIBERS)
#if !defined(__x86_64__)
  ucontext_t uc{};
#endif
};

// Saves the running context into `from` and continues `to`.
void fiber_switch(FiberContext& from, FiberContext& to);
// The OS thread's own context (its TSan fiber, under TSan).
FiberContext thread_context();
// Happens-before annotations for ThreadSanitizer (no-ops elsewhere).
void tsan_release(void* token);
void tsan_acquire(void* token);

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
  void* tsan_ = nullptr;
};

}  // namespace triescope::cuda_host
