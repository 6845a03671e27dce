#include "fiber.h"

#include <sys/mman.h>
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <new>

#if defined(TRIESCOPE_CUDA_HOST_TSAN_FIBERS)
#include <sanitizer/tsan_interface.h>
#endif


namespace triescope::cuda_host {

namespace {

size_t page_size() {
  static const size_t p = static_cast<size_t>(sysconf(_SC_PAGESIZE));
  return p;
}

[[noreturn]] void die(const char* what) {
  std::fprintf(stderr, "triescope cuda host runtime: %s\n", what);
  std::abort();
}

// Tells TSan which fiber runs next (before the stack switch), without a
// happens-before edge: only the executor's barrier annotations order fibers.
void tsan_switch(FiberContext& to) {
#if defined(TRIESCOPE_CUDA_HOST_TSAN_FIBERS)
  __tsan_switch_to_fiber(to.tsan, __tsan_switch_to_fiber_no_sync);
#else
  (void)to;
#endif
}

}  // namespace

FiberContext thread_context() {
  FiberContext c;
#if defined(TRIESCOPE_CUDA_HOST_TSAN_FIBERS)
  c.tsan = __tsan_get_current_fiber();
#endif
  return c;
}

void tsan_release(void* token) {
#if defined(TRIESCOPE_CUDA_HOST_TSAN_FIBERS)
  __tsan_release(token);
#else
  (void)token;
#endif
}

void tsan_acquire(void* token) {
#if defined(TRIESCOPE_CUDA_HOST_TSAN_FIBERS)
  __tsan_acquire(token);
#else
  (void)token;
#endif
}

#if defined(__x86_64__)

// switch(save, load): push the callee-saved registers, store rsp in *save,
// load rsp from load, pop the other context's. The SSE/x87 control words are
// not switched: no kernel changes rounding modes, and ldmxcsr is slow.
// A new fiber's stack is laid out as if it had switched away just before
// the trampoline, which calls entry(arg) (rbx, r12) on an aligned stack.
extern "C" void triescope_fiber_switch(void** save_sp, void* load_sp);
extern "C" void triescope_fiber_trampoline();
asm(R"(
  .text
  .globl triescope_fiber_switch
  .type triescope_fiber_switch, @function
triescope_fiber_switch:
  .cfi_startproc
  pushq %rbp
  pushq %rbx
  pushq %r12
  pushq %r13
  pushq %r14
  pushq %r15
  movq %rsp, (%rdi)
  movq %rsi, %rsp
  popq %r15
  popq %r14
  popq %r13
  popq %r12
  popq %rbx
  popq %rbp
  ret
  .cfi_endproc
  .size triescope_fiber_switch, .-triescope_fiber_switch

  .globl triescope_fiber_trampoline
  .type triescope_fiber_trampoline, @function
triescope_fiber_trampoline:
  .cfi_startproc
  .cfi_undefined rip
  movq %r12, %rdi
  andq $-16, %rsp
  callq *%rbx
  ud2
  .cfi_endproc
  .size triescope_fiber_trampoline, .-triescope_fiber_trampoline
)");

void fiber_switch(FiberContext& from, FiberContext& to) {
  tsan_switch(to);
  triescope_fiber_switch(&from.sp, to.sp);
}

void FiberStack::prepare(FiberContext& ctx, void (*entry)(void*), void* arg) {
  auto top = (reinterpret_cast<uintptr_t>(base_) + bytes_) & ~uintptr_t{15};
  auto* s = reinterpret_cast<uint64_t*>(top) - 8;
  s[0] = 0;                                  // r15
  s[1] = 0;                                  // r14
  s[2] = 0;                                  // r13
  s[3] = reinterpret_cast<uint64_t>(arg);    // r12
  s[4] = reinterpret_cast<uint64_t>(entry);  // rbx
  s[5] = 0;                                  // rbp
  s[6] = reinterpret_cast<uint64_t>(&triescope_fiber_trampoline);
  s[7] = 0;                                  // (the trampoline's stack, aligned below)
  ctx.sp = s;
  ctx.tsan = tsan_;
}

#else  // ucontext: portable, slower (a signal-mask system call per switch)

void fiber_switch(FiberContext& from, FiberContext& to) {
  tsan_switch(to);
  swapcontext(&from.uc, &to.uc);
}

void FiberStack::prepare(FiberContext& ctx, void (*entry)(void*), void* arg) {
  if (getcontext(&ctx.uc) != 0) die("getcontext failed");
  ctx.uc.uc_stack.ss_sp = static_cast<char*>(base_) + page_size();
  ctx.uc.uc_stack.ss_size = bytes_ - page_size();
  ctx.uc.uc_link = nullptr;
  ctx.tsan = tsan_;
  const auto a = reinterpret_cast<uintptr_t>(arg);
  const auto f = reinterpret_cast<uintptr_t>(entry);
  makecontext(&ctx.uc, reinterpret_cast<void (*)()>(+[](unsigned f_hi, unsigned f_lo, unsigned a_hi, unsigned a_lo) {
                auto fn = reinterpret_cast<void (*)(void*)>((uintptr_t{f_hi} << 32) | f_lo);
                fn(reinterpret_cast<void*>((uintptr_t{a_hi} << 32) | a_lo));
              }),
              4, static_cast<unsigned>(f >> 32), static_cast<unsigned>(f), static_cast<unsigned>(a >> 32), static_cast<unsigned>(a));
}

#endif

FiberStack::FiberStack(size_t bytes) {
  const size_t p = page_size();
  bytes_ = (bytes + p - 1) / p * p + p;  // + a guard page at the bottom
  void* m = mmap(nullptr, bytes_, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (m == MAP_FAILED) throw std::bad_alloc();
  if (mprotect(m, p, PROT_NONE) != 0) die("mprotect of a fiber's guard page failed");
  base_ = m;
#if defined(TRIESCOPE_CUDA_HOST_TSAN_FIBERS)
  tsan_ = __tsan_create_fiber(0);
#endif
}

FiberStack::~FiberStack() {
#if defined(TRIESCOPE_CUDA_HOST_TSAN_FIBERS)
  if (tsan_) __tsan_destroy_fiber(tsan_);
#endif
  if (base_) munmap(base_, bytes_);
}

}  // namespace triescope::cuda_host
