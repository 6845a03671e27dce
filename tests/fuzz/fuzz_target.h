// What every fuzz target shares. The rule (docs/reliability.md): a reader
// given bad input throws triescope::Error; any other exception, a sanitizer
// report, a hang or a runaway allocation is a finding. A finding aborts, which
// libFuzzer and the replay driver (fuzz_replay_main.cpp) both report.
#pragma once
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <string>
#include <string_view>
#include <typeinfo>

#include <sys/mman.h>
#include <unistd.h>

#include "core/common/error.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size);

namespace triescope::fuzz {

[[noreturn]] inline void finding(const std::string& what) {
  std::fprintf(stderr, "fuzz: FINDING: %s\n", what.c_str());
  std::fflush(stderr);
  std::abort();
}

// Runs `read`; true when it accepted the input, false when it threw Error.
template <class F>
bool accepted(F&& read) {
  try {
    read();
    return true;
  } catch (const Error&) {
    return false;
  } catch (const std::exception& e) {
    finding(std::string("an exception other than triescope::Error escaped (") + typeid(e).name() + "): " + e.what());
  } catch (...) {
    finding("a non-standard exception escaped");
  }
}

#define FUZZ_CHECK(cond, what) \
  do {                         \
    if (!(cond)) ::triescope::fuzz::finding(what); \
  } while (0)

// The input as a file for readers that take a path: an anonymous memory file
// named /proc/self/fd/N (no disk, gone with the descriptor).
class InputFile {
 public:
  InputFile(const uint8_t* data, size_t size) {
    fd_ = ::memfd_create("fuzz-input", MFD_CLOEXEC);
    if (fd_ < 0) finding("memfd_create failed");
    for (size_t off = 0; off < size;) {
      const ssize_t n = ::write(fd_, data + off, size - off);
      if (n <= 0) finding("write to the memory file failed");
      off += static_cast<size_t>(n);
    }
    path_ = "/proc/self/fd/" + std::to_string(fd_);
  }
  ~InputFile() { ::close(fd_); }
  InputFile(const InputFile&) = delete;
  InputFile& operator=(const InputFile&) = delete;
  const std::string& path() const { return path_; }

 private:
  int fd_ = -1;
  std::string path_;
};

inline std::string as_string(const uint8_t* data, size_t size) { return std::string(reinterpret_cast<const char*>(data), size); }

}  // namespace triescope::fuzz
