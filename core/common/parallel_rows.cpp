#include "core/common/parallel_rows.h"

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <mutex>
#include <string>
#include <system_error>
#include <thread>
#include <vector>

#include "core/common/error.h"

namespace triescope {

namespace {

constexpr int32_t kMaxDefaultThreads = 16;
constexpr int32_t kMinPoolThreads = 8;
constexpr int64_t kMinParallelEntries = int64_t{1} << 16;  // smaller jobs run on the caller (threads = 0)

// Workers that sleep between jobs. One job at a time: the caller opens it,
// works on it too, and closes it once every worker that joined has left, so
// no worker ever sees a job whose caller has returned.
class RowPool {
 public:
  // A thread the system refuses (a process or memory limit) leaves the pool
  // smaller, never broken: the caller works through every row anyway, and
  // stderr says how many workers there are and why.
  explicit RowPool(int32_t workers) {
    threads_.reserve(static_cast<size_t>(workers));
    for (int32_t w = 0; w < workers; ++w) {
      try {
        threads_.emplace_back([this] { work(); });
      } catch (const std::system_error& e) {
        std::fprintf(stderr, "triescope: the host thread pool could create %d of its %d worker threads (%s); it runs with %d (%s)\n", w,
                     workers, e.what(), w, kHostThreadsEnv);
        break;
      }
    }
    for (auto& t : threads_) t.detach();  // the pool lives as long as the process
  }
  int32_t workers() const { return static_cast<int32_t>(threads_.size()); }
  // Runs the job with up to `helpers` workers beside the caller.
  void run(int32_t n, const std::function<void(int32_t)>& fn, int32_t helpers) {
    {
      std::lock_guard<std::mutex> lock(m_);
      fn_ = &fn;
      n_ = n;
      next_.store(0);
      open_slots_ = helpers;
      error_ = nullptr;
      ++generation_;
    }
    for (int32_t h = 0; h < helpers; ++h) wake_.notify_one();  // the others sleep on
    drain();
    std::unique_lock<std::mutex> lock(m_);
    open_slots_ = 0;  // no one joins from here on
    done_.wait(lock, [this] { return inside_ == 0; });
    fn_ = nullptr;
    if (error_) std::rethrow_exception(error_);
  }
  std::mutex& busy() { return busy_; }

 private:
  // Takes rows until none is left.
  void drain() {
    for (int32_t i = next_.fetch_add(1); i < n_; i = next_.fetch_add(1)) {
      try {
        (*fn_)(i);
      } catch (...) {
        std::lock_guard<std::mutex> lock(m_);
        if (!error_ || i < error_row_) error_ = std::current_exception(), error_row_ = i;
      }
    }
  }
  void work() {
    uint64_t seen = 0;
    std::unique_lock<std::mutex> lock(m_);
    for (;;) {
      wake_.wait(lock, [&] { return generation_ != seen; });
      seen = generation_;
      if (open_slots_ == 0) continue;
      --open_slots_;
      ++inside_;
      lock.unlock();
      drain();
      lock.lock();
      if (--inside_ == 0) done_.notify_all();
    }
  }

  std::vector<std::thread> threads_;
  std::mutex busy_;  // held by the one caller whose job runs
  std::mutex m_;
  std::condition_variable wake_, done_;
  const std::function<void(int32_t)>* fn_ = nullptr;
  int32_t n_ = 0;
  std::atomic<int32_t> next_{0};
  int32_t open_slots_ = 0;  // workers that may still join the current job
  int32_t inside_ = 0;      // workers inside it
  uint64_t generation_ = 0;
  std::exception_ptr error_;  // the exception of the lowest row that threw
  int32_t error_row_ = 0;
};

RowPool& row_pool() {
  // At least 8 threads, so that a caller may ask for more than the default
  // (the tests do); never destroyed: workers may sleep past exit.
  static RowPool* pool = new RowPool(std::max(parallel_rows_threads(), kMinPoolThreads) - 1);
  return *pool;
}

}  // namespace

int32_t parallel_rows_threads() {
  if (const char* env = std::getenv(kHostThreadsEnv); env != nullptr && *env != '\0') {
    // Digits only, no sign, space or leading zero: what a person means by a count.
    const std::string s(env);
    const bool digits = s.size() <= 4 && s[0] != '0' && s.find_first_not_of("0123456789") == std::string::npos;
    const long v = digits ? std::strtol(env, nullptr, 10) : 0;
    TS_CHECK(v >= 1 && v <= 4096, kHostThreadsEnv << "=\"" << env << "\": expected a thread count, an integer from 1 to 4096");
    return static_cast<int32_t>(v);
  }
  const unsigned hw = std::thread::hardware_concurrency();
  return std::clamp<int32_t>(static_cast<int32_t>(hw), 1, kMaxDefaultThreads);
}

void parallel_rows(int32_t n, const std::function<void(int32_t)>& fn, int32_t threads, int64_t row_entries) {
  TS_CHECK(n >= 0 && threads >= 0, "parallel_rows: bad sizes (n " << n << ", threads " << threads << ")");
  const int32_t by_default = parallel_rows_threads();  // read on every call, so a bad value is named even for small jobs
  const bool small = static_cast<double>(n) * static_cast<double>(row_entries) < static_cast<double>(kMinParallelEntries);
  const int32_t want = std::min(n, threads > 0 ? threads : small ? 1 : by_default);
  RowPool* pool = want > 1 ? &row_pool() : nullptr;
  std::unique_lock<std::mutex> busy;
  if (pool) busy = std::unique_lock<std::mutex>(pool->busy(), std::try_to_lock);
  if (!pool || !busy.owns_lock()) {
    std::exception_ptr error;
    for (int32_t i = 0; i < n; ++i) {
      try {
        fn(i);
      } catch (...) {
        if (!error) error = std::current_exception();
      }
    }
    if (error) std::rethrow_exception(error);
    return;
  }
  pool->run(n, fn, std::min(want - 1, pool->workers()));
}

}  // namespace triescope
