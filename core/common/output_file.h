// One output file, written so that nothing is replaced that must not be
// (docs/reliability.md, "Output paths"). The path decides, before anything
// is written:
//   "-"                     standard output, written directly (streamed)
//   missing, regular file   a temporary next to it, renamed into place by commit()
//   symlink                 followed to its final target (a loop is refused),
//                           which then gets these rules; the link stays
//   char/block device, FIFO opened and written directly (streamed); never renamed over
//   directory, socket       refused, named
// Temporaries are "<name>.triescope-tmp.<pid>.<n>.<random>", created with
// O_EXCL (unique per writer, not per process) and flock()ed while written.
// Opening an output removes the temporaries in its folder whose lock is free
// and which are older than kStaleTempSeconds: their writer died without
// cleaning up (SIGKILL, a power loss). Errors are Error naming the path.
#pragma once
#include <cstdio>
#include <string>
#include <vector>

namespace triescope {

inline constexpr const char* kTempMarker = ".triescope-tmp.";
// A temporary younger than this is never removed as stale: its writer may
// be between creating it and locking it.
inline constexpr int kStaleTempSeconds = 10;

class OutputFile {
 public:
  explicit OutputFile(std::string path);
  ~OutputFile();  // uncommitted: the temporary is removed (a stream is just closed)
  OutputFile(const OutputFile&) = delete;
  OutputFile& operator=(const OutputFile&) = delete;

  void write(const char* data, size_t n);
  void write(const std::string& s) { write(s.data(), s.size()); }
  void commit();  // flush, close, rename the temporary into place

  const std::string& path() const { return path_; }
  // Where the bytes land: path(), or the symlink's final target.
  const std::string& target() const { return target_; }
  bool streamed() const { return streamed_; }
  const std::string& temp_path() const { return tmp_; }  // "" when streamed
  // Stale temporaries of dead writers removed when this output was opened.
  const std::vector<std::string>& stale_removed() const { return stale_removed_; }

 private:
  std::string path_, target_, tmp_;
  std::FILE* f_ = nullptr;
  int lock_fd_ = -1;
  bool streamed_ = false, committed_ = false;
  std::vector<std::string> stale_removed_;
};

// Stale temporaries in `dir` (see above) removed; returns their paths.
std::vector<std::string> output_remove_stale_temps(const std::string& dir);

}  // namespace triescope
