#include "core/common/output_file.h"

#include <atomic>
#include <cerrno>
#include <climits>
#include <cstring>
#include <ctime>
#include <dirent.h>
#include <fcntl.h>
#include <filesystem>
#include <random>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/common/error.h"
#include "core/common/file_io.h"

namespace triescope {

namespace {

std::string parent_dir(const std::string& p) {
  const std::string d = std::filesystem::path(p).parent_path().string();
  return d.empty() ? std::string(".") : d;
}

// `path` with every symlink of its last component followed (the folders on
// the way may be links: rename works through them).
std::string follow_symlinks(const std::string& path) {
  std::string p = path;
  for (int hops = 0;; ++hops) {
    struct stat st {};
    if (::lstat(p.c_str(), &st) != 0 || !S_ISLNK(st.st_mode)) return p;
    TS_CHECK(hops < 40, path << ": symlink loop (40 links followed, the last " << p << "): refusing to write through it");
    std::string buf(PATH_MAX, '\0');
    const ssize_t n = ::readlink(p.c_str(), buf.data(), buf.size());
    TS_CHECK(n > 0, path << ": cannot read symlink " << p << ": " << std::strerror(errno));
    buf.resize(static_cast<size_t>(n));
    p = buf.front() == '/' ? buf : (std::filesystem::path(p).parent_path() / buf).string();
  }
}

std::string random_hex() {
  static std::atomic<uint64_t> salt{0};
  std::random_device rd;
  const uint64_t x = (static_cast<uint64_t>(rd()) << 32 ^ rd()) + salt.fetch_add(0x9e3779b97f4a7c15ULL);
  char buf[17];
  std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(x));
  return buf;
}

std::atomic<uint64_t> g_writer_seq{0};

}  // namespace

std::vector<std::string> output_remove_stale_temps(const std::string& dir) {
  std::vector<std::string> removed;
  DIR* d = ::opendir(dir.c_str());
  if (d == nullptr) return removed;
  const time_t now = std::time(nullptr);
  while (const dirent* e = ::readdir(d)) {
    if (std::strstr(e->d_name, kTempMarker) == nullptr) continue;
    const std::string p = dir + "/" + e->d_name;
    const int fd = ::open(p.c_str(), O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
    if (fd < 0) continue;
    struct stat st {};
    // A live writer holds the lock; a fresh file's writer may not hold it yet.
    if (::fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && now - st.st_mtime >= kStaleTempSeconds && ::flock(fd, LOCK_EX | LOCK_NB) == 0 &&
        ::unlink(p.c_str()) == 0)
      removed.push_back(p);
    ::close(fd);
  }
  ::closedir(d);
  return removed;
}

OutputFile::OutputFile(std::string path) : path_(std::move(path)) {
  TS_CHECK(!path_.empty(), "output path is empty");
  if (path_ == "-") {
    target_ = path_;
    streamed_ = true;
    f_ = stdout;
    return;
  }
  target_ = follow_symlinks(path_);
  const std::string named = target_ == path_ ? path_ : path_ + " (a symlink to " + target_ + ")";
  struct stat st {};
  const bool exists = ::lstat(target_.c_str(), &st) == 0;
  TS_CHECK(exists || errno == ENOENT, named << ": cannot write: " << std::strerror(errno));
  if (exists && (S_ISCHR(st.st_mode) || S_ISBLK(st.st_mode) || S_ISFIFO(st.st_mode))) {
    // Never renamed over: a device or pipe is written as it is.
    const int fd = ::open(target_.c_str(), O_WRONLY | O_NOCTTY | O_CLOEXEC);
    TS_CHECK(fd >= 0, named << ": cannot open for writing: " << std::strerror(errno));
    f_ = ::fdopen(fd, "wb");
    if (f_ == nullptr) ::close(fd);
    TS_CHECK(f_ != nullptr, named << ": cannot open for writing");
    streamed_ = true;
    return;
  }
  TS_CHECK(!exists || !S_ISDIR(st.st_mode), named << ": is a directory, not a file");
  TS_CHECK(!exists || S_ISREG(st.st_mode), named << ": is neither a regular file, a device nor a FIFO (a socket?): refusing to replace it");
  const std::string dir = parent_dir(target_);
  stale_removed_ = output_remove_stale_temps(dir);
  const std::string stem = target_ + kTempMarker + std::to_string(::getpid()) + "." + std::to_string(g_writer_seq.fetch_add(1)) + ".";
  int fd = -1;
  for (int attempt = 0; fd < 0 && attempt < 16; ++attempt) {
    tmp_ = stem + random_hex();
    file_temp_track(tmp_);
    fd = ::open(tmp_.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
    if (fd < 0) file_temp_untrack(tmp_);
    if (fd < 0 && errno != EEXIST) break;
  }
  TS_CHECK(fd >= 0, named << ": cannot open for writing (temporary " << tmp_ << "): " << std::strerror(errno));
  if (exists) (void)::fchmod(fd, st.st_mode & 07777);  // the replaced file's permissions
  lock_fd_ = ::dup(fd);
  if (lock_fd_ >= 0) (void)::flock(lock_fd_, LOCK_EX);  // held until renamed: this writer is alive
  f_ = ::fdopen(fd, "wb");
  if (f_ == nullptr) {
    ::close(fd);
    ::unlink(tmp_.c_str());
    file_temp_untrack(tmp_);
    TS_FAIL(named << ": cannot open for writing (temporary " << tmp_ << ")");
  }
}

OutputFile::~OutputFile() {
  if (f_ != nullptr && f_ != stdout) std::fclose(f_);
  if (f_ == stdout) std::fflush(stdout);
  if (!tmp_.empty() && !committed_) {
    ::unlink(tmp_.c_str());
    file_temp_untrack(tmp_);
  }
  if (lock_fd_ >= 0) ::close(lock_fd_);
}

void OutputFile::write(const char* data, size_t n) {
  TS_CHECK(f_ != nullptr, path_ << ": write after commit");
  TS_CHECK(std::fwrite(data, 1, n, f_) == n, path_ << ": write failed: " << std::strerror(errno));
}

void OutputFile::commit() {
  TS_CHECK(f_ != nullptr, path_ << ": committed twice");
  std::FILE* f = f_;
  f_ = nullptr;
  if (f == stdout) {
    TS_CHECK(std::fflush(f) == 0, "standard output: write failed: " << std::strerror(errno));
    committed_ = true;
    return;
  }
  const bool flushed = std::fflush(f) == 0;
  TS_CHECK(std::fclose(f) == 0 && flushed, path_ << ": write failed on close: " << std::strerror(errno));
  if (!streamed_) {
    TS_CHECK(std::rename(tmp_.c_str(), target_.c_str()) == 0,
             path_ << ": cannot rename temporary " << tmp_ << " into place: " << std::strerror(errno));
    file_temp_untrack(tmp_);
  }
  committed_ = true;
}

}  // namespace triescope
