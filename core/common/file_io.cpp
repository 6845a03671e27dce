#include "core/common/file_io.h"

#include <atomic>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <new>
#include <stdexcept>
#include <system_error>
#include <vector>
#include <sstream>
#include <unistd.h>

#include "core/common/error.h"
#include "core/common/output_file.h"

namespace triescope {

// Read in chunks into a string reserved to the file's size: a stream copy
// (`ss << in.rdbuf()`) turns an allocation failure into a failbit on the copy
// and returned the bytes read so far as if they were the file.
std::string file_read_all(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  TS_CHECK(in, path << ": cannot open for reading");
  std::string out;
  std::vector<char> chunk(size_t{1} << 16);
  try {
    std::error_code ec;
    const auto size = std::filesystem::is_regular_file(path, ec) ? std::filesystem::file_size(path, ec) : 0;
    if (!ec && size > 0) out.reserve(size);
    while (in.read(chunk.data(), static_cast<std::streamsize>(chunk.size())) || in.gcount() > 0)
      out.append(chunk.data(), static_cast<size_t>(in.gcount()));
  } catch (const std::bad_alloc&) {
    TS_FAIL(path << ": out of memory reading the file into memory (" << out.size() << " bytes read; the whole file is needed)");
  } catch (const std::length_error&) {
    TS_FAIL(path << ": too big to read into memory (" << out.size() << " bytes read)");
  }
  TS_CHECK(!in.bad(), path << ": read failed after " << out.size() << " bytes");
  return out;
}

namespace {
// The tracked temporaries, readable from a signal handler: fixed slots, each
// claimed by a compare-exchange and published by `ready` after its path is copied.
struct TrackedTemp {
  std::atomic<int> state{0};  // 0 free, 1 being written, 2 ready
  char path[4096];
};
TrackedTemp g_tracked[32];

void remove_tracked_and_die(int sig) {
  for (auto& t : g_tracked)
    if (t.state.load() == 2) ::unlink(t.path);  // unlink is async-signal-safe
  std::signal(sig, SIG_DFL);
  std::raise(sig);
}
}  // namespace

void file_temp_track(const std::string& tmp) {
  if (tmp.size() >= sizeof(TrackedTemp::path)) return;  // no such path can be opened anyway
  for (auto& t : g_tracked) {
    int free_slot = 0;
    if (t.state.compare_exchange_strong(free_slot, 1)) {
      std::memcpy(t.path, tmp.c_str(), tmp.size() + 1);
      t.state.store(2);
      return;
    }
  }
}

void file_temp_untrack(const std::string& tmp) {
  for (auto& t : g_tracked) {
    int ready = 2;
    if (t.state.load() == 2 && std::strcmp(t.path, tmp.c_str()) == 0 && t.state.compare_exchange_strong(ready, 1)) {
      t.state.store(0);
      return;
    }
  }
}

void file_temp_remove_on_signals() {
  for (int sig : {SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGXFSZ}) std::signal(sig, remove_tracked_and_die);
}

void file_write_atomic(const std::string& path, const std::string& text) {
  OutputFile out(path);
  out.write(text);
  out.commit();
}

}  // namespace triescope
