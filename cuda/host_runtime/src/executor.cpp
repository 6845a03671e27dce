#include "executor.h"

#include <pthread.h>

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <map>
#include <mutex>
#include <new>
#include <sstream>
#include <thread>
#include <vector>

#include "fiber.h"
#include "launch_stats.h"

namespace triescope::cuda_host {

thread_local ThreadCtx* tl_thread = nullptr;

ThreadCtx& this_thread() {
  ThreadCtx* t = tl_thread;
  if (t == nullptr) {
    std::fprintf(stderr, "triescope cuda host runtime: threadIdx, blockIdx, __syncthreads or __shared__ used outside a kernel\n");
    std::abort();
  }
  return *t;
}

namespace {

using Clock = std::chrono::steady_clock;

// Thrown into a CUDA thread whose block faulted: unwinds it to its entry.
struct KernelAbort {};

// Bytes CD CD F0 FF: NaN as float and as double (at any 4-byte offset),
// -995891 as int32: a kernel that reads shared memory it never wrote gets
// garbage that no comparison with a CPU twin lets through.
constexpr uint32_t kSharedPoison = 0xFFF0CDCDu;

void poison(void* p, size_t bytes) {
  auto* b = static_cast<unsigned char*>(p);
  for (size_t i = 0; i < bytes; ++i) b[i] = static_cast<unsigned char>(kSharedPoison >> (8 * (i % 4)));
}

std::string where(const std::source_location& at) {
  const char* f = at.file_name();
  const char* slash = std::strrchr(f, '/');
  return std::string(slash ? slash + 1 : f) + ":" + std::to_string(at.line());
}

bool same_site(const std::source_location& a, const std::source_location& b) {
  return a.line() == b.line() && a.column() == b.column() &&
         (a.file_name() == b.file_name() || std::strcmp(a.file_name(), b.file_name()) == 0);
}

// The block's lock: real in threads mode; in fibers mode one OS thread runs
// the whole block and switches only where it chooses, so nothing to lock.
class BlockLock {
 public:
  BlockLock(std::mutex& m, bool real) : m_(m), real_(real) { lock(); }
  ~BlockLock() {
    if (held_) unlock();
  }
  BlockLock(const BlockLock&) = delete;
  BlockLock& operator=(const BlockLock&) = delete;
  void lock() {
    if (real_) m_.lock();
    held_ = true;
  }
  void unlock() {
    if (real_) m_.unlock();
    held_ = false;
  }
  std::mutex& mutex() { return m_; }

 private:
  std::mutex& m_;
  bool real_;
  bool held_ = false;
};

const char* warp_op_name(WarpOp op) {
  switch (op) {
    case WarpOp::shfl_idx: return "__shfl_sync";
    case WarpOp::shfl_up: return "__shfl_up_sync";
    case WarpOp::shfl_down: return "__shfl_down_sync";
    case WarpOp::shfl_xor: return "__shfl_xor_sync";
    case WarpOp::ballot: return "__ballot_sync";
    case WarpOp::any: return "__any_sync";
    case WarpOp::all: return "__all_sync";
    case WarpOp::sync: return "__syncwarp";
  }
  return "warp collective";
}

std::string dim_str(unsigned x, unsigned y, unsigned z) {
  return "(" + std::to_string(x) + "," + std::to_string(y) + "," + std::to_string(z) + ")";
}

// ---------------------------------------------------------------------------
// One block of a launch: the threads' states and the rules that release them.
// ---------------------------------------------------------------------------
enum class TState : uint8_t { running, at_barrier, at_warp, exited };

struct LaneWait {
  WarpOp op = WarpOp::sync;
  unsigned mask = 0;
  uint64_t in = 0, out = 0;
  int operand = 0, width = 32;
};

}  // namespace

class ThreadPool;

class BlockRun {
 public:
  BlockRun(const LaunchSpec& L, uint3 bidx, ThreadMode mode) : L_(L), mode_(mode) {
    n_ = L.block.x * L.block.y * L.block.z;
    nwarps_ = (n_ + 31) / 32;
    ctx_.resize(n_);
    for (uint32_t t = 0; t < n_; ++t) {
      ThreadCtx& c = ctx_[t];
      c.thread_idx = uint3{t % L.block.x, (t / L.block.x) % L.block.y, t / (L.block.x * L.block.y)};
      c.block_idx = bidx;
      c.block_dim = L.block;
      c.grid_dim = L.grid;
      c.block = this;
      c.linear = t;
    }
    state_.assign(n_, TState::running);
    site_.resize(n_);
    lane_.resize(n_);
    warp_waiting_.assign(nwarps_, 0);
    running_ = n_;
    dyn_ = ::operator new(std::max<size_t>(L.shmem, 1), std::align_val_t(128));
    poison(dyn_, L.shmem);
    bidx_ = bidx;
  }
  ~BlockRun() {
    ::operator delete(dyn_, std::align_val_t(128));
    for (auto& [tag, s] : shared_) ::operator delete(s.ptr, std::align_val_t(s.align));
  }
  BlockRun(const BlockRun&) = delete;
  BlockRun& operator=(const BlockRun&) = delete;

  std::string run_fibers(std::vector<std::unique_ptr<FiberStack>>& stacks);
  std::string run_threads(ThreadPool& pool);

  void barrier(const std::source_location& at);
  uint64_t warp(WarpOp op, unsigned mask, uint64_t value, int operand, int width, const std::source_location& at);
  void* shared(const void* tag, size_t bytes, size_t align);
  void* dynamic_shared() { return dyn_; }
  uint64_t barrier_rounds() const { return barrier_rounds_; }
  uint64_t warp_collectives() const { return warp_collectives_; }

  // Runs CUDA thread t to its end (fiber or OS thread).
  void thread_main(uint32_t t);

 private:
  struct Shared {
    void* ptr;
    size_t bytes, align;
  };
  void wait_released_locked(BlockLock& lk, uint32_t t, bool may_complete);
  void make_runnable_locked(uint32_t t);
  void switch_away(uint32_t t);
  uint32_t pop_ready();
  friend void fiber_entry(void* p);
  void resolve_locked();
  bool try_release_warps_locked(uint32_t w);
  void release_barrier_locked();
  size_t released_ = 0;  // threads made runnable so far (threads mode: whom to wake)
  uint64_t barrier_rounds_ = 0;    // __syncthreads rounds released
  uint64_t warp_collectives_ = 0;  // warp collectives completed (one per group of lanes)
  void leave_state_locked(uint32_t t);
  void fault_locked(const std::string& what);
  std::string describe_threads_locked() const;
  std::string thread_state_text(uint32_t t) const;
  std::string head() const;

  const LaunchSpec& L_;
  ThreadMode mode_;
  uint3 bidx_{};
  uint32_t n_ = 0, nwarps_ = 0;
  std::vector<ThreadCtx> ctx_;
  std::vector<TState> state_;
  std::vector<std::source_location> site_;
  std::vector<LaneWait> lane_;
  std::vector<uint32_t> warp_waiting_;
  uint32_t running_ = 0, at_barrier_ = 0, at_warp_ = 0, exited_ = 0;
  bool aborted_ = false;
  std::string fault_;
  std::map<const void*, Shared> shared_;
  size_t static_shared_bytes_ = 0;
  void* dyn_ = nullptr;
  // Fibers mode: each CUDA thread's context, the scheduler's, the threads
  // ready to run (a ring) and the one running now.
  std::vector<FiberContext> fctx_;
  FiberContext sched_ctx_;
  std::vector<uint32_t> ready_;
  size_t ready_head_ = 0, ready_size_ = 0;
  static constexpr uint32_t kNone = ~0u;
  uint32_t current_ = kNone;
  std::mutex mu_;
  std::condition_variable cv_;
};

std::string BlockRun::head() const {
  return "kernel " + launch_name(L_) + ", block " + dim_str(bidx_.x, bidx_.y, bidx_.z) + " of grid " +
         dim_str(L_.grid.x, L_.grid.y, L_.grid.z) + " x " + dim_str(L_.block.x, L_.block.y, L_.block.z) + " threads";
}

std::string BlockRun::thread_state_text(uint32_t t) const {
  switch (state_[t]) {
    case TState::running: return "still running";
    case TState::exited: return "exited";
    case TState::at_barrier: return "wait at __syncthreads " + where(site_[t]);
    case TState::at_warp:
      return std::string("wait at ") + warp_op_name(lane_[t].op) + " " + where(site_[t]) + " (mask 0x" +
             [&] {
               char b[16];
               std::snprintf(b, sizeof b, "%08x", lane_[t].mask);
               return std::string(b);
             }() +
             ")";
  }
  return "?";
}

// "threads 0-31 wait at __shfl_down_sync x.cuh:45 (mask 0xffffffff); threads 32-255 exited"
std::string BlockRun::describe_threads_locked() const {
  std::ostringstream o;
  uint32_t begin = 0;
  bool first = true;
  for (uint32_t t = 1; t <= n_; ++t) {
    if (t < n_ && thread_state_text(t) == thread_state_text(begin)) continue;
    if (!first) o << "; ";
    first = false;
    if (t - 1 == begin) o << "thread " << begin;
    else o << "threads " << begin << "-" << t - 1;
    o << " " << thread_state_text(begin);
    begin = t;
  }
  return o.str();
}

void BlockRun::fault_locked(const std::string& what) {
  if (aborted_) return;
  aborted_ = true;
  fault_ = head() + ": " + what;
  tsan_release(&fault_);  // written by a CUDA thread, read by the launcher
  if (mode_ == ThreadMode::threads) cv_.notify_all();
}

void BlockRun::leave_state_locked(uint32_t t) {
  switch (state_[t]) {
    case TState::running: --running_; break;
    case TState::at_barrier: --at_barrier_; break;
    case TState::at_warp:
      --at_warp_;
      --warp_waiting_[t / 32];
      break;
    case TState::exited: --exited_; break;
  }
}

void BlockRun::make_runnable_locked(uint32_t t) {
  state_[t] = TState::running;
  ++running_;
  ++released_;
  if (mode_ == ThreadMode::fibers && t != current_) {
    ready_[(ready_head_ + ready_size_) % n_] = t;
    ++ready_size_;
  }
}

void BlockRun::release_barrier_locked() {
  ++barrier_rounds_;
  for (uint32_t t = 0; t < n_; ++t)
    if (state_[t] == TState::at_barrier) make_runnable_locked(t);
  at_barrier_ = 0;
}

// Releases each group of lanes of warp w whose mask's lanes have all arrived
// at the same collective; faults when a group can never complete.
bool BlockRun::try_release_warps_locked(uint32_t w) {
  const uint32_t lo = w * 32, hi = std::min(n_, lo + 32), lanes = hi - lo;
  bool released = false;
  for (uint32_t l0 = lo; l0 < hi; ++l0) {
    if (state_[l0] != TState::at_warp) continue;
    const LaneWait& a = lane_[l0];
    bool complete = true;
    for (uint32_t i = 0; i < 32; ++i) {
      if (!((a.mask >> i) & 1u)) continue;
      if (i >= lanes) {
        fault_locked(std::string(warp_op_name(a.op)) + " at " + where(site_[l0]) + ": its mask names lane " + std::to_string(i) +
                     ", but warp " + std::to_string(w) + " has only " + std::to_string(lanes) + " threads");
        return false;
      }
      const uint32_t t = lo + i;
      if (state_[t] == TState::running) {
        complete = false;
        continue;
      }
      const LaneWait& b = lane_[t];
      if (state_[t] != TState::at_warp || b.op != a.op || b.mask != a.mask || b.width != a.width || !same_site(site_[t], site_[l0])) {
        // Lane t is blocked elsewhere or gone: this collective can never complete.
        if (state_[t] == TState::exited || state_[t] == TState::at_barrier || running_ == 0) {
          fault_locked(std::string("divergent ") + warp_op_name(a.op) + ": lane " + std::to_string(l0 - lo) + " of warp " +
                       std::to_string(w) + " waits at " + where(site_[l0]) + " for lane " + std::to_string(i) + ", which " +
                       thread_state_text(t) + "; " + describe_threads_locked());
          return false;
        }
        complete = false;
      }
    }
    if (!complete) continue;
    // Every lane of the mask is here: compute each lane's result.
    for (uint32_t i = 0; i < 32; ++i) {
      if (!((a.mask >> i) & 1u)) continue;
      LaneWait& me = lane_[lo + i];
      const int width = me.width;
      const int seg = static_cast<int>(i) & ~(width - 1);
      int src = static_cast<int>(i);
      switch (me.op) {
        case WarpOp::shfl_idx: src = seg + (me.operand & (width - 1)); break;
        case WarpOp::shfl_up: src = (static_cast<int>(i) - seg) >= me.operand ? static_cast<int>(i) - me.operand : static_cast<int>(i); break;
        case WarpOp::shfl_down: src = (static_cast<int>(i) - seg) + me.operand < width ? static_cast<int>(i) + me.operand : static_cast<int>(i); break;
        case WarpOp::shfl_xor: {
          const int x = static_cast<int>(i) ^ me.operand;
          src = (x & ~(width - 1)) == seg ? x : static_cast<int>(i);
          break;
        }
        default: break;
      }
      switch (me.op) {
        case WarpOp::shfl_idx:
        case WarpOp::shfl_up:
        case WarpOp::shfl_down:
        case WarpOp::shfl_xor:
          if (!((a.mask >> src) & 1u)) {
            fault_locked(std::string(warp_op_name(me.op)) + " at " + where(site_[lo + i]) + ": lane " + std::to_string(i) +
                         " reads lane " + std::to_string(src) + ", which is not in the mask (undefined in CUDA)");
            return false;
          }
          me.out = lane_[lo + static_cast<uint32_t>(src)].in;
          break;
        case WarpOp::ballot:
        case WarpOp::any:
        case WarpOp::all: {
          uint64_t ballot = 0;
          for (uint32_t j = 0; j < 32; ++j)
            if (((a.mask >> j) & 1u) && lane_[lo + j].in) ballot |= uint64_t{1} << j;
          me.out = me.op == WarpOp::ballot ? ballot : me.op == WarpOp::any ? (ballot != 0) : (ballot == a.mask);
          break;
        }
        case WarpOp::sync: me.out = 0; break;
      }
    }
    for (uint32_t i = 0; i < 32; ++i) {
      if (!((a.mask >> i) & 1u)) continue;
      leave_state_locked(lo + i);
      make_runnable_locked(lo + i);
    }
    ++warp_collectives_;
    released = true;
  }
  return released;
}

void BlockRun::resolve_locked() {
  for (;;) {
    if (aborted_) return;
    bool released = false;
    for (uint32_t w = 0; w < nwarps_ && !aborted_; ++w)
      if (warp_waiting_[w] > 0) released |= try_release_warps_locked(w);
    if (aborted_) return;
    if (running_ == 0 && at_warp_ == 0 && at_barrier_ > 0) {
      // Everyone not exited waits at a barrier: it completes only if nobody
      // exited and everyone waits at the same __syncthreads.
      uint32_t first = 0;
      while (state_[first] != TState::at_barrier) ++first;
      for (uint32_t t = 0; t < n_; ++t) {
        if (state_[t] == TState::exited) {
          fault_locked("__syncthreads at " + where(site_[first]) + " is not reached by every thread of the block (thread " +
                       std::to_string(t) + " exited before it; a barrier in divergent code): " + describe_threads_locked());
          return;
        }
        if (!same_site(site_[t], site_[first])) {
          fault_locked("divergent __syncthreads: thread " + std::to_string(first) + " waits at " + where(site_[first]) + ", thread " +
                       std::to_string(t) + " at " + where(site_[t]) + ": " + describe_threads_locked());
          return;
        }
      }
      release_barrier_locked();
      released = true;
    }
    if (!released) break;
  }
  if (running_ == 0 && exited_ < n_) fault_locked("deadlock: " + describe_threads_locked());
}

// Thread t has just arrived at a barrier or warp collective: release whoever
// can go on, then wait until t itself is released. may_complete: t's arrival
// may have completed its warp's collective.
void BlockRun::wait_released_locked(BlockLock& lk, uint32_t t, bool may_complete) {
  if (mode_ == ThreadMode::fibers) {
    // Resolve only when t's arrival can change something: its warp may be
    // complete, or nobody else can run. Otherwise run the next ready thread.
    if (may_complete) try_release_warps_locked(t / 32);
    if (running_ == 0 && !aborted_) resolve_locked();
    if (state_[t] != TState::running && !aborted_) switch_away(t);
  } else {
    const size_t before = released_;
    resolve_locked();
    if (released_ != before) cv_.notify_all();  // wake whom this arrival released
    const auto deadline = Clock::now() + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(settings().barrier_timeout_s));
    std::unique_lock<std::mutex> ul(lk.mutex(), std::adopt_lock);
    while (state_[t] != TState::running && !aborted_) {
      if (cv_.wait_until(ul, deadline) == std::cv_status::timeout && state_[t] != TState::running && !aborted_) {
        fault_locked("thread " + std::to_string(t) + " " + thread_state_text(t) + " for more than " +
                     std::to_string(settings().barrier_timeout_s) + " s (a thread that never arrives): " + describe_threads_locked());
      }
    }
    ul.release();  // lk still holds it
  }
  if (aborted_) throw KernelAbort{};
}

// Fibers mode: t blocks or ends; the next ready thread runs, or the
// scheduler when none is ready. Returns when t is switched to again.
uint32_t BlockRun::pop_ready() {
  const uint32_t next = ready_[ready_head_];
  ready_head_ = (ready_head_ + 1) % n_;
  --ready_size_;
  return next;
}

void BlockRun::switch_away(uint32_t t) {
  if (ready_size_ > 0) {
    const uint32_t next = pop_ready();
    current_ = next;
    tl_thread = &ctx_[next];
    fiber_switch(fctx_[t], fctx_[next]);
  } else {
    current_ = kNone;
    tl_thread = nullptr;
    fiber_switch(fctx_[t], sched_ctx_);
  }
}

void BlockRun::barrier(const std::source_location& at) {
  const uint32_t t = this_thread().linear;
  BlockLock lk(mu_, mode_ == ThreadMode::threads);
  if (aborted_) throw KernelAbort{};
  leave_state_locked(t);
  state_[t] = TState::at_barrier;
  site_[t] = at;
  ++at_barrier_;
  tsan_release(&at_barrier_);  // what t did before the barrier...
  wait_released_locked(lk, t, false);
  tsan_acquire(&at_barrier_);  // ...happens before what anyone does after it
}

uint64_t BlockRun::warp(WarpOp op, unsigned mask, uint64_t value, int operand, int width, const std::source_location& at) {
  const uint32_t t = this_thread().linear;
  BlockLock lk(mu_, mode_ == ThreadMode::threads);
  if (aborted_) throw KernelAbort{};
  const uint32_t lane = t % 32;
  if (!((mask >> lane) & 1u)) {
    fault_locked(std::string(warp_op_name(op)) + " at " + where(at) + ": lane " + std::to_string(lane) + " of warp " +
                 std::to_string(t / 32) + " calls it with a mask that leaves itself out");
    throw KernelAbort{};
  }
  if (width < 1 || width > 32 || (width & (width - 1)) != 0) {
    fault_locked(std::string(warp_op_name(op)) + " at " + where(at) + ": width " + std::to_string(width) + " is not a power of 2 in [1, 32]");
    throw KernelAbort{};
  }
  leave_state_locked(t);
  state_[t] = TState::at_warp;
  site_[t] = at;
  lane_[t] = LaneWait{op, mask, value, 0, operand, width};
  ++at_warp_;
  const bool may_complete = ++warp_waiting_[t / 32] >= static_cast<uint32_t>(__builtin_popcount(mask));
  tsan_release(&warp_waiting_[t / 32]);  // a warp collective orders its lanes
  wait_released_locked(lk, t, may_complete);
  tsan_acquire(&warp_waiting_[t / 32]);
  return lane_[t].out;
}

void* BlockRun::shared(const void* tag, size_t bytes, size_t align) {
  BlockLock lk(mu_, mode_ == ThreadMode::threads);
  if (aborted_) throw KernelAbort{};
  auto it = shared_.find(tag);
  if (it != shared_.end()) {
    tsan_acquire(it->second.ptr);  // its allocation happens before every thread's use
    return it->second.ptr;
  }
  static_shared_bytes_ += bytes;
  if (static_shared_bytes_ + L_.shmem > DeviceLimits::shared_per_block_optin || static_shared_bytes_ > DeviceLimits::shared_per_block) {
    fault_locked("its __shared__ variables take " + std::to_string(static_shared_bytes_) + " bytes (+ " + std::to_string(L_.shmem) +
                 " dynamic): over sm_90's 48 KiB of static shared memory per block");
    throw KernelAbort{};
  }
  align = std::max<size_t>(align, 16);
  void* p = ::operator new(std::max<size_t>(bytes, 1), std::align_val_t(align));
  poison(p, bytes);
  shared_.emplace(tag, Shared{p, bytes, align});
  tsan_release(p);
  return p;
}

void BlockRun::thread_main(uint32_t t) {
  tl_thread = &ctx_[t];
  tsan_acquire(&bidx_);  // the launch's set-up happens before the block
  std::string error;
  try {
    L_.body->run();
  } catch (const KernelAbort&) {
  } catch (const std::exception& e) {
    error = std::string("an exception escaped the kernel: ") + e.what();
  } catch (...) {
    error = "an exception escaped the kernel";
  }
  BlockLock lk(mu_, mode_ == ThreadMode::threads);
  tsan_release(&exited_);  // and the block before what follows it
  if (!error.empty()) fault_locked("thread " + std::to_string(t) + ": " + error);
  leave_state_locked(t);
  state_[t] = TState::exited;
  ++exited_;
  if (mode_ == ThreadMode::threads) {
    const size_t before = released_;
    resolve_locked();
    if (released_ != before) cv_.notify_all();
  } else if (running_ == 0 && exited_ < n_ && !aborted_) {
    resolve_locked();  // the others may all wait at a barrier this thread never reached
  }
  tl_thread = nullptr;
}

// ---------------------------------------------------------------------------
// Fibers mode: one OS thread runs the block's CUDA threads, each on its own
// stack. A thread runs until it blocks (barrier, warp collective) or ends,
// then switches straight to the next ready thread; the arrival that completes
// a collective releases its waiters; when nobody is ready the scheduler
// names the deadlock.
// ---------------------------------------------------------------------------
namespace {
struct FiberArg {
  BlockRun* block;
  uint32_t t;
};
}  // namespace

void fiber_entry(void* p) {
  const FiberArg a = *static_cast<FiberArg*>(p);
  a.block->thread_main(a.t);
  a.block->switch_away(a.t);  // never switched to again
  std::abort();
}

std::string BlockRun::run_fibers(std::vector<std::unique_ptr<FiberStack>>& stacks) {
  while (stacks.size() < n_) stacks.push_back(std::make_unique<FiberStack>(settings().fiber_stack_bytes));
  std::vector<FiberArg> args(n_);
  fctx_.assign(n_, FiberContext{});
  ready_.assign(n_, 0);
  for (uint32_t t = 0; t < n_; ++t) {
    args[t] = FiberArg{this, t};
    stacks[t]->prepare(fctx_[t], &fiber_entry, &args[t]);
    ready_[t] = t;
  }
  ready_head_ = 0;
  ready_size_ = n_;
  sched_ctx_ = thread_context();
  tsan_release(&bidx_);
  while (exited_ < n_) {
    if (ready_size_ > 0) {
      const uint32_t next = pop_ready();
      current_ = next;
      tl_thread = &ctx_[next];
      fiber_switch(sched_ctx_, fctx_[next]);
      tl_thread = nullptr;
      continue;
    }
    // Nobody can run: release a barrier or a warp, or name the deadlock.
    current_ = kNone;
    if (!aborted_) resolve_locked();
    if (aborted_) {
      // Every thread still alive resumes, sees the fault and unwinds.
      ready_head_ = 0;
      ready_size_ = 0;
      for (uint32_t t = 0; t < n_; ++t)
        if (state_[t] != TState::exited) ready_[ready_size_++] = t;
    } else if (ready_size_ == 0) {
      fault_locked("deadlock: " + describe_threads_locked());
    }
  }
  current_ = kNone;
  tsan_acquire(&exited_);
  tsan_acquire(&fault_);
  return aborted_ ? fault_ : std::string();
}

// ---------------------------------------------------------------------------
// Threads mode: a pool of OS threads, one per CUDA thread of the block, so
// ThreadSanitizer sees every CUDA thread and every barrier (mutex + condition
// variable) as what they are.
// ---------------------------------------------------------------------------
class ThreadPool {
 public:
  ~ThreadPool() {
    {
      std::lock_guard lk(mu_);
      stop_ = true;
    }
    cv_.notify_all();
    for (auto& t : threads_) pthread_join(t, nullptr);
  }
  // Runs job(i) for i in [0, n) on n pool threads and waits for all.
  void run(uint32_t n, const std::function<void(uint32_t)>& job) {
    grow(n);
    std::unique_lock lk(mu_);
    job_ = &job;
    active_ = n;
    done_ = 0;
    ++generation_;
    cv_.notify_all();
    done_cv_.wait(lk, [&] { return done_ == active_; });
    job_ = nullptr;
  }

 private:
  struct Start {
    ThreadPool* pool;
    uint32_t index;
  };
  void grow(uint32_t n) {
    while (threads_.size() < n) {
      pthread_attr_t attr;
      pthread_attr_init(&attr);
      pthread_attr_setstacksize(&attr, 4u << 20);
      pthread_t th;
      auto* s = new Start{this, static_cast<uint32_t>(threads_.size())};
      const int rc = pthread_create(&th, &attr, &ThreadPool::main, s);
      pthread_attr_destroy(&attr);
      if (rc != 0) {
        delete s;
        throw std::runtime_error("cannot start a thread for the host runtime's threads mode");
      }
      threads_.push_back(th);
    }
  }
  static void* main(void* p) {
    auto* s = static_cast<Start*>(p);
    ThreadPool* pool = s->pool;
    const uint32_t i = s->index;
    delete s;
    uint64_t seen = 0;
    for (;;) {
      const std::function<void(uint32_t)>* job = nullptr;
      {
        std::unique_lock lk(pool->mu_);
        pool->cv_.wait(lk, [&] { return pool->stop_ || (pool->generation_ != seen && i < pool->active_ && pool->job_); });
        if (pool->stop_) return nullptr;
        seen = pool->generation_;
        job = pool->job_;
      }
      (*job)(i);
      std::lock_guard lk(pool->mu_);
      if (++pool->done_ == pool->active_) pool->done_cv_.notify_all();
    }
  }
  std::vector<pthread_t> threads_;
  std::mutex mu_;
  std::condition_variable cv_, done_cv_;
  const std::function<void(uint32_t)>* job_ = nullptr;
  uint32_t active_ = 0, done_ = 0;
  uint64_t generation_ = 0;
  bool stop_ = false;
};

std::string BlockRun::run_threads(ThreadPool& pool) {
  pool.run(n_, [this](uint32_t t) { thread_main(t); });
  return aborted_ ? fault_ : std::string();
}

namespace {

// ---------------------------------------------------------------------------
// The watchdog: a block that runs past its time (a thread in an endless loop
// never reaches the barrier the others wait at) ends the process with the
// block's name instead of hanging it.
// ---------------------------------------------------------------------------
class Watchdog {
 public:
  void enter(const std::string& what) {
    std::lock_guard lk(mu_);
    if (!thread_.joinable()) thread_ = std::thread([this] { loop(); });
    what_ = what;
    since_ = Clock::now();
    busy_ = true;
  }
  void leave() {
    std::lock_guard lk(mu_);
    busy_ = false;
  }
  ~Watchdog() {
    {
      std::lock_guard lk(mu_);
      stop_ = true;
    }
    cv_.notify_all();
    if (thread_.joinable()) thread_.join();
  }

 private:
  void loop() {
    std::unique_lock lk(mu_);
    while (!stop_) {
      cv_.wait_for(lk, std::chrono::milliseconds(500));
      const double limit = settings().block_timeout_s;
      if (busy_ && std::chrono::duration<double>(Clock::now() - since_).count() > limit) {
        std::fprintf(stderr, "triescope cuda host runtime: %s has run for more than %.0f s (a thread that never ends?); aborting\n",
                     what_.c_str(), limit);
        std::fflush(stderr);
        std::abort();
      }
    }
  }
  std::mutex mu_;
  std::condition_variable cv_;
  std::thread thread_;
  std::string what_;
  Clock::time_point since_;
  bool busy_ = false, stop_ = false;
};

struct Executor {
  std::mutex mu;  // one launch at a time, whichever host thread submits it
  std::vector<std::unique_ptr<FiberStack>> stacks;
  std::unique_ptr<ThreadPool> pool;
  Watchdog watchdog;
};

Executor& executor() {
  static Executor* e = new Executor;  // never destroyed: launches may come from static destructors' frees
  return *e;
}

}  // namespace

std::string launch_name(const LaunchSpec& launch) {
  return std::string(launch.site.name) + " (launched at " + where(launch.at) + ")";
}

std::string execute_launch(const LaunchSpec& L) {
  Executor& ex = executor();
  std::lock_guard lk(ex.mu);
  const ThreadMode mode = settings().threads;
  if (mode == ThreadMode::threads && !ex.pool) ex.pool = std::make_unique<ThreadPool>();
  ThreadCtx* const outer = tl_thread;
  LaunchStat stat;
  stat.kernel = L.site.name;
  stat.site = where(L.at);
  stat.blocks = 1ULL * L.grid.x * L.grid.y * L.grid.z;
  stat.threads_per_block = L.block.x * L.block.y * L.block.z;
  stat.dynamic_shared_bytes = L.shmem;
  for (unsigned z = 0; z < L.grid.z; ++z)
    for (unsigned y = 0; y < L.grid.y; ++y)
      for (unsigned x = 0; x < L.grid.x; ++x) {
        BlockRun b(L, uint3{x, y, z}, mode);
        ex.watchdog.enter("kernel " + launch_name(L) + ", block " + dim_str(x, y, z));
        std::string fault = mode == ThreadMode::fibers ? b.run_fibers(ex.stacks) : b.run_threads(*ex.pool);
        ex.watchdog.leave();
        stat.barrier_rounds_max = std::max(stat.barrier_rounds_max, b.barrier_rounds());
        stat.barrier_rounds_total += b.barrier_rounds();
        stat.warp_collectives_max = std::max(stat.warp_collectives_max, b.warp_collectives());
        stat.warp_collectives_total += b.warp_collectives();
        if (!fault.empty()) {
          tl_thread = outer;
          record_launch(std::move(stat));
          return fault;
        }
      }
  tl_thread = outer;
  record_launch(std::move(stat));
  return {};
}

// --- the device-side entry points (device.h) ----------------------------------------------
void block_barrier(std::source_location at) { this_thread().block->barrier(at); }

uint64_t warp_collective(WarpOp op, unsigned mask, uint64_t value, int operand, int width, std::source_location at) {
  return this_thread().block->warp(op, mask, value, operand, width, at);
}

void* block_shared_storage(const void* tag, size_t bytes, size_t align) { return this_thread().block->shared(tag, bytes, align); }

void* block_dynamic_shared_storage() { return this_thread().block->dynamic_shared(); }

}  // namespace triescope::cuda_host
