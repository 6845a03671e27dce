#include "launch_stats.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <mutex>
#include <sstream>

namespace triescope::cuda_host {

namespace {

struct Recorder {
  std::mutex mu;
  std::vector<LaunchStat> launches;
};

Recorder& recorder() {
  static Recorder* r = new Recorder;  // never destroyed: the exit hook reads it
  return *r;
}

std::string json_string(const std::string& s) {
  std::string out = "\"";
  for (const char c : s) {
    if (c == '"' || c == '\\') out += '\\';
    if (static_cast<unsigned char>(c) < 0x20) continue;
    out += c;
  }
  return out + "\"";
}

void write_stats_file() {
  const char* path = std::getenv("TRIESCOPE_CUDA_EMU_STATS");
  if (path == nullptr || *path == '\0') return;
  const std::string text = launch_stats_json();
  std::FILE* f = std::fopen(path, "w");
  if (f == nullptr || std::fwrite(text.data(), 1, text.size(), f) != text.size() || std::fclose(f) != 0)
    std::fprintf(stderr, "triescope cuda host runtime: TRIESCOPE_CUDA_EMU_STATS: cannot write %s\n", path);
}

}  // namespace

void record_launch(LaunchStat stat) {
  static const bool hooked = [] {
    if (const char* p = std::getenv("TRIESCOPE_CUDA_EMU_STATS"); p != nullptr && *p != '\0') std::atexit(write_stats_file);
    return true;
  }();
  (void)hooked;
  Recorder& r = recorder();
  std::lock_guard lk(r.mu);
  r.launches.push_back(std::move(stat));
}

std::vector<LaunchStat> launch_stats() {
  Recorder& r = recorder();
  std::lock_guard lk(r.mu);
  return r.launches;
}

void reset_launch_stats() {
  Recorder& r = recorder();
  std::lock_guard lk(r.mu);
  r.launches.clear();
}

std::string launch_stats_json() {
  const std::vector<LaunchStat> all = launch_stats();
  struct Totals {
    uint64_t launches = 0, blocks = 0, barrier_rounds_max = 0, barrier_rounds_total = 0, warp_collectives_total = 0;
  };
  std::map<std::string, Totals> per_kernel;
  std::ostringstream o;
  o << "{\"launches\": [";
  for (size_t i = 0; i < all.size(); ++i) {
    const LaunchStat& s = all[i];
    o << (i ? ",\n  " : "\n  ") << "{\"kernel\": " << json_string(s.kernel) << ", \"site\": " << json_string(s.site)
      << ", \"blocks\": " << s.blocks << ", \"threads_per_block\": " << s.threads_per_block
      << ", \"dynamic_shared_bytes\": " << s.dynamic_shared_bytes << ", \"barrier_rounds_max\": " << s.barrier_rounds_max
      << ", \"barrier_rounds_total\": " << s.barrier_rounds_total << ", \"warp_collectives_max\": " << s.warp_collectives_max
      << ", \"warp_collectives_total\": " << s.warp_collectives_total << "}";
    Totals& t = per_kernel[s.kernel];
    ++t.launches;
    t.blocks += s.blocks;
    t.barrier_rounds_max = std::max(t.barrier_rounds_max, s.barrier_rounds_max);
    t.barrier_rounds_total += s.barrier_rounds_total;
    t.warp_collectives_total += s.warp_collectives_total;
  }
  o << "],\n\"kernels\": {";
  bool first = true;
  for (const auto& [name, t] : per_kernel) {
    o << (first ? "\n  " : ",\n  ") << json_string(name) << ": {\"launches\": " << t.launches << ", \"blocks\": " << t.blocks
      << ", \"barrier_rounds_max\": " << t.barrier_rounds_max << ", \"barrier_rounds_total\": " << t.barrier_rounds_total
      << ", \"warp_collectives_total\": " << t.warp_collectives_total << "}";
    first = false;
  }
  o << "}}\n";
  return o.str();
}

}  // namespace triescope::cuda_host
