#include "core/common/output_file.h"

#include <cctype>
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

// The kernel's protected_symlinks rule, which a shell redirection obeys: in a
// sticky world-writable folder (/tmp) a link is followed only when its owner
// is the writer or the folder's owner. Another user's link there is a trap.
void check_symlink_owner(const std::string& path, const std::string& link, const struct stat& link_st) {
  struct stat dir {};
  const std::string folder = parent_dir(link);
  if (::stat(folder.c_str(), &dir) != 0) return;
  const bool sticky_shared = (dir.st_mode & S_ISVTX) && (dir.st_mode & S_IWOTH);
  TS_CHECK(!sticky_shared || link_st.st_uid == ::geteuid() || link_st.st_uid == dir.st_uid,
           path << ": " << link << " is a symlink owned by uid " << link_st.st_uid << " in the sticky world-writable folder " << folder
                << ": refusing to write through it (the kernel's protected_symlinks rule)");
}

// `path` with every symlink of its last component followed (the folders on
// the way may be links: rename works through them).
std::string follow_symlinks(const std::string& path) {
  std::string p = path;
  for (int hops = 0;; ++hops) {
    struct stat st {};
    if (::lstat(p.c_str(), &st) != 0 || !S_ISLNK(st.st_mode)) return p;
    TS_CHECK(hops < 40, path << ": symlink loop (40 links followed, the last " << p << "): refusing to write through it");
    check_symlink_owner(path, p, st);
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

namespace {
// "<name>.triescope-tmp.<pid>.<seq>.<16 hex digits>": the names OutputFile
// gives its temporaries, and nothing else.
bool is_temp_name(const char* name) {
  const char* m = std::strstr(name, kTempMarker);
  if (m == nullptr) return false;
  const char* c = m + std::strlen(kTempMarker);
  for (int field = 0; field < 2; ++field) {
    const char* start = c;
    while (*c >= '0' && *c <= '9') ++c;
    if (c == start || *c != '.') return false;
    ++c;
  }
  int hex = 0;
  for (; std::isxdigit(static_cast<unsigned char>(*c)); ++c) ++hex;
  return hex == 16 && *c == '\0';
}
}  // namespace

std::vector<std::string> output_remove_stale_temps(const std::string& dir) {
  std::vector<std::string> removed;
  DIR* d = ::opendir(dir.c_str());
  if (d == nullptr) return removed;
  const time_t now = std::time(nullptr);
  while (const dirent* e = ::readdir(d)) {
    if (!is_temp_name(e->d_name)) continue;
    const std::string p = dir + "/" + e->d_name;
    const int fd = ::open(p.c_str(), O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
    if (fd < 0) continue;
    struct stat st {};
    // A live writer holds the lock; a fresh file's writer may not hold it yet;
    // another user's temporary is theirs to clean.
    if (::fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && st.st_uid == ::geteuid() && now - st.st_mtime >= kStaleTempSeconds &&
        ::flock(fd, LOCK_EX | LOCK_NB) == 0 &&
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
  // The temporary's name is the target's plus about 45 characters: a long
  // target name is cut so that it stays within NAME_MAX (255).
  const std::string suffix = kTempMarker + std::to_string(::getpid()) + "." + std::to_string(g_writer_seq.fetch_add(1)) + ".";
  const std::string base = std::filesystem::path(target_).filename().string();
  const size_t keep = std::min(base.size(), size_t{255} - suffix.size() - 16);
  const std::string stem = (std::filesystem::path(target_).parent_path() / (base.substr(0, keep) + suffix)).string();
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
