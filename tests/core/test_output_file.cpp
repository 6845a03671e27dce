// The output rules of core/common/output_file.h (issue 27): nothing but a
// regular file or a missing path is renamed over; devices, FIFOs and "-" are
// streamed; symlinks are followed (loops refused); temporaries are unique per
// writer; stale temporaries of dead writers are removed by the next writer.
#include <catch2/catch.hpp>

#include <csignal>
#include <filesystem>
#include <fstream>
#include <thread>

#include <fcntl.h>
#include <sys/file.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/wait.h>
#include <unistd.h>
#include <utime.h>

#include "core/common/error.h"
#include "core/common/file_io.h"
#include "core/common/output_file.h"
#include "core/trace/trace.h"

using namespace triescope;
namespace fs = std::filesystem;

namespace {

fs::path fresh_dir(const std::string& name) {
  const fs::path d = fs::temp_directory_path() / ("triescope-out-" + name + "-" + std::to_string(::getpid()));
  fs::remove_all(d);
  fs::create_directories(d);
  return d;
}

std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

std::vector<std::string> temps_in(const fs::path& dir) {
  std::vector<std::string> out;
  for (auto& e : fs::directory_iterator(dir))
    if (e.path().filename().string().find(kTempMarker) != std::string::npos) out.push_back(e.path().string());
  return out;
}

}  // namespace

TEST_CASE("a regular or missing output path gets a temporary renamed into place", "[trace][output]") {
  const fs::path d = fresh_dir("regular");
  const fs::path p = d / "a.txt";
  file_write_atomic(p.string(), "one");
  CHECK(file_read_all(p.string()) == "one");
  ::chmod(p.c_str(), 0640);
  file_write_atomic(p.string(), "two");
  CHECK(file_read_all(p.string()) == "two");
  struct stat st {};
  REQUIRE(::stat(p.c_str(), &st) == 0);
  CHECK((st.st_mode & 0777) == 0640);  // the replaced file's permissions kept
  {
    OutputFile o(p.string());
    CHECK_FALSE(o.streamed());
    CHECK(o.temp_path().find(kTempMarker) != std::string::npos);
    o.write("three");
  }  // not committed: the old content stays, the temporary goes
  CHECK(file_read_all(p.string()) == "two");
  CHECK(temps_in(d).empty());
  fs::remove_all(d);
}

TEST_CASE("a device node at the output path is written, never replaced", "[trace][output]") {
  // As root (this container), a fresh /dev/null-like node: mknod c 1 3.
  const fs::path d = fresh_dir("device");
  const fs::path dev = d / "null";
  if (::mknod(dev.c_str(), S_IFCHR | 0666, makedev(1, 3)) != 0) {
    WARN("mknod not permitted here (not root?): the device case is not tested");
    return;
  }
  {
    TraceFileWriter w(dev.string());
    CHECK(w.output().streamed());
    w.record({{"kind", "header"}});
    w.commit();
  }
  struct stat st {};
  REQUIRE(::lstat(dev.c_str(), &st) == 0);
  CHECK(S_ISCHR(st.st_mode));  // 9ae4cdc: a regular file with the trace
  CHECK(st.st_rdev == makedev(1, 3));
  CHECK(temps_in(d).empty());
  // /dev/full-like: the write fails with a named error; the device stays.
  const fs::path full = d / "full";
  REQUIRE(::mknod(full.c_str(), S_IFCHR | 0666, makedev(1, 7)) == 0);
  const std::string big(1 << 16, 'x');
  CHECK(error_of([&] { file_write_atomic(full.string(), big); }).rfind(full.string() + ": write failed", 0) == 0);
  REQUIRE(::lstat(full.c_str(), &st) == 0);
  CHECK(S_ISCHR(st.st_mode));
  CHECK(temps_in(d).empty());
  fs::remove_all(d);
}

TEST_CASE("a FIFO at the output path is streamed to its reader", "[trace][output]") {
  const fs::path d = fresh_dir("fifo");
  const fs::path fifo = d / "pipe";
  REQUIRE(::mkfifo(fifo.c_str(), 0600) == 0);
  std::string got;
  std::thread reader([&] {
    std::ifstream in(fifo);
    got.assign(std::istreambuf_iterator<char>(in), {});
  });
  file_write_atomic(fifo.string(), "through the pipe\n");
  reader.join();
  CHECK(got == "through the pipe\n");
  struct stat st {};
  REQUIRE(::lstat(fifo.c_str(), &st) == 0);
  CHECK(S_ISFIFO(st.st_mode));
  fs::remove_all(d);
}

TEST_CASE("'-' as the output path is standard output", "[trace][output]") {
  OutputFile o("-");
  CHECK(o.streamed());
  CHECK(o.temp_path().empty());
  o.commit();
  CHECK_FALSE(fs::exists("-"));
}

TEST_CASE("a symlink at the output path is followed, a loop refused by name", "[trace][output]") {
  const fs::path d = fresh_dir("symlink");
  const fs::path target = d / "real.jsonl", link = d / "link.jsonl", link2 = d / "link2.jsonl";
  file_write_atomic(target.string(), "old");
  fs::create_symlink("real.jsonl", link);  // relative, resolved against the link's folder
  fs::create_symlink(link, link2);         // a chain
  file_write_atomic(link2.string(), "new");
  CHECK(fs::is_symlink(link));
  CHECK(fs::is_symlink(link2));
  CHECK(file_read_all(target.string()) == "new");
  // A link to a missing file: the file is created, the link stays.
  const fs::path dangling = d / "dangling";
  fs::create_symlink("made.jsonl", dangling);
  file_write_atomic(dangling.string(), "made");
  CHECK(fs::is_symlink(dangling));
  CHECK(file_read_all((d / "made.jsonl").string()) == "made");
  // A loop: 9ae4cdc replaced the link silently.
  const fs::path a = d / "loop_a", b = d / "loop_b";
  fs::create_symlink("loop_b", a);
  fs::create_symlink("loop_a", b);
  const std::string err = error_of([&] { file_write_atomic(a.string(), "x"); });
  CHECK(err.rfind(a.string() + ": symlink loop (40 links followed", 0) == 0);
  CHECK(fs::is_symlink(a));
  CHECK(fs::is_symlink(b));
  CHECK(temps_in(d).empty());
  fs::remove_all(d);
}

TEST_CASE("a directory at the output path is refused, named", "[trace][output]") {
  const fs::path d = fresh_dir("dir");
  CHECK(error_of([&] { OutputFile o(d.string()); }) == d.string() + ": is a directory, not a file");
  fs::remove_all(d);
}

TEST_CASE("two writers of one path in one process use their own temporaries", "[trace][output]") {
  const fs::path d = fresh_dir("two");
  const fs::path p = d / "t.jsonl";
  {
    TraceFileWriter a(p.string()), b(p.string());
    CHECK(a.output().temp_path() != b.output().temp_path());
    for (int i = 0; i < 1000; ++i) {
      a.record({{"kind", "header"}, {"writer", "a"}, {"i", i}});
      b.record({{"kind", "header"}, {"writer", "b"}, {"i", i}});
    }
    a.commit();
    b.commit();
  }
  // The last commit wins whole: 9ae4cdc interleaved both into one temporary.
  std::ifstream in(p);
  std::string line;
  int n = 0;
  while (std::getline(in, line)) {
    CHECK(json::parse(line)["writer"] == "b");
    ++n;
  }
  CHECK(n == 1000);
  CHECK(temps_in(d).empty());
  fs::remove_all(d);
}

TEST_CASE("the temporary of a killed writer is removed by the next writer in its folder", "[trace][output]") {
  const fs::path d = fresh_dir("stale");
  const fs::path p = d / "out.jsonl";
  // A child opens an output and dies of SIGKILL mid-write (no handler can run).
  const pid_t pid = ::fork();
  REQUIRE(pid >= 0);
  if (pid == 0) {
    OutputFile o(p.string());
    o.write("partial");
    ::raise(SIGKILL);
    ::_exit(0);
  }
  int status = 0;
  REQUIRE(::waitpid(pid, &status, 0) == pid);
  REQUIRE(WIFSIGNALED(status));
  auto left = temps_in(d);
  REQUIRE(left.size() == 1);
  const std::string stale = left.front();
  CHECK(stale.find("out.jsonl" + std::string(kTempMarker) + std::to_string(pid) + ".") != std::string::npos);
  // Fresh: its writer may be between creating and locking it, so it stays.
  { OutputFile o((d / "other.jsonl").string()); CHECK(o.stale_removed().empty()); }
  CHECK(fs::exists(stale));
  // Old enough and unlocked: removed and reported.
  const struct utimbuf old{std::time(nullptr) - 60, std::time(nullptr) - 60};
  REQUIRE(::utime(stale.c_str(), &old) == 0);
  {
    OutputFile o((d / "other.jsonl").string());
    REQUIRE(o.stale_removed().size() == 1);
    CHECK(o.stale_removed().front() == stale);
  }
  CHECK_FALSE(fs::exists(stale));
  // A live writer's temporary (locked) is never taken, however old.
  {
    OutputFile live(p.string());
    live.write("x");
    REQUIRE(::utime(live.temp_path().c_str(), &old) == 0);
    OutputFile o((d / "other.jsonl").string());
    CHECK(o.stale_removed().empty());
    CHECK(fs::exists(live.temp_path()));
  }
  fs::remove_all(d);
}

TEST_CASE("a writer stopped by SIGXFSZ (ulimit -f) or SIGQUIT leaves no temporary", "[trace][output]") {
  const int sig = GENERATE(SIGXFSZ, SIGQUIT);
  CAPTURE(sig);
  const fs::path d = fresh_dir("sig" + std::to_string(sig));
  const fs::path p = d / "out.jsonl";
  const pid_t pid = ::fork();
  REQUIRE(pid >= 0);
  if (pid == 0) {
    file_temp_remove_on_signals();
    if (sig == SIGXFSZ) {
      const struct rlimit lim{4096, 4096};
      ::setrlimit(RLIMIT_FSIZE, &lim);
    }
    OutputFile o(p.string());
    const std::string chunk(1024, 'x');
    for (int i = 0; i < 64; ++i) {
      o.write(chunk);
      if (i == 1 && sig == SIGQUIT) ::raise(SIGQUIT);
    }
    o.commit();
    ::_exit(0);
  }
  int status = 0;
  REQUIRE(::waitpid(pid, &status, 0) == pid);
  CHECK(WIFSIGNALED(status));
  CHECK(WTERMSIG(status) == sig);
  CHECK(temps_in(d).empty());  // 9ae4cdc: a temporary nothing removes
  CHECK_FALSE(fs::exists(p));
  fs::remove_all(d);
}

TEST_CASE("file_read_all under an address-space limit says it ran out of memory, never returns part of the file", "[file_io]") {
#if defined(__SANITIZE_ADDRESS__)
  // ASan's allocator aborts on exhaustion instead of throwing bad_alloc; the
  // plain build (triescope_tests_core) runs this case.
  SUCCEED("not run under AddressSanitizer");
  return;
#endif
  const fs::path d = fresh_dir("read_limit");
  const fs::path p = d / "big.txt";
  {
    // 256 MiB, sparse: no disk used, every byte a zero.
    std::ofstream(p.string(), std::ios::binary).put('1');
    fs::resize_file(p, size_t{256} << 20);
  }
  const pid_t pid = ::fork();
  REQUIRE(pid >= 0);
  if (pid == 0) {
    // The child's address space may grow by 96 MiB: too little for the file.
    long pages = 0;
    std::ifstream("/proc/self/statm") >> pages;
    const rlim_t cap = static_cast<rlim_t>(pages) * static_cast<rlim_t>(::sysconf(_SC_PAGESIZE)) + (rlim_t{96} << 20);
    const struct rlimit lim{cap, cap};
    ::setrlimit(RLIMIT_AS, &lim);
    try {
      const std::string bytes = file_read_all(p.string());
      ::_exit(bytes.size() == (size_t{256} << 20) ? 3 : 1);  // 1: a part returned as the whole
    } catch (const Error& e) {
      const std::string m = e.what();
      ::_exit(m.find("big.txt") != std::string::npos && m.find("out of memory") != std::string::npos ? 0 : 2);
    } catch (...) {
      ::_exit(4);
    }
  }
  int status = 0;
  REQUIRE(::waitpid(pid, &status, 0) == pid);
  REQUIRE(WIFEXITED(status));
  CHECK(WEXITSTATUS(status) == 0);  // 1: truncated, 2: another message, 3: the cap did not bite, 4: another exception
  fs::remove_all(d);
}

TEST_CASE("the stale-temporary cleaner takes only this user's files with the writer's own names", "[trace][output]") {
  const fs::path d = fresh_dir("stale_names");
  const struct utimbuf old{std::time(nullptr) - 60, std::time(nullptr) - 60};
  auto make = [&](const std::string& name) {
    const fs::path p = d / name;
    std::ofstream(p.string()) << "x";
    REQUIRE(::utime(p.c_str(), &old) == 0);
    return p;
  };
  const fs::path ours = make(std::string("out.jsonl") + kTempMarker + "123.4.0123456789abcdef");
  // A name that merely contains the marker is someone else's file.
  const fs::path lookalike = make(std::string("notes") + kTempMarker + "keep-me");
  const fs::path short_hex = make(std::string("out.jsonl") + kTempMarker + "123.4.0123");
  std::vector<fs::path> kept{lookalike, short_hex};
  // Another user's temporary (root can give a file away; others cannot make one).
  const fs::path theirs = make(std::string("x.jsonl") + kTempMarker + "9.9.fedcba9876543210");
  if (::chown(theirs.c_str(), 4242, 4242) == 0) kept.push_back(theirs);
  else fs::remove(theirs);
  const std::vector<std::string> removed = output_remove_stale_temps(d.string());
  CHECK(removed == std::vector<std::string>{ours.string()});
  for (const fs::path& p : kept) CHECK(fs::exists(p));
  fs::remove_all(d);
}

TEST_CASE("an output name up to NAME_MAX gets a temporary that fits", "[trace][output]") {
  const fs::path d = fresh_dir("long_name");
  for (size_t len : {200, 230, 255}) {
    CAPTURE(len);
    const fs::path p = d / (std::string(len - 6, 'n') + ".jsonl");
    OutputFile o(p.string());
    o.write("x\n");
    o.commit();
    CHECK(fs::file_size(p) == 2);
  }
  CHECK(temps_in(d).empty());
  fs::remove_all(d);
}

TEST_CASE("another user's symlink in a sticky world-writable folder is not followed", "[trace][output]") {
  const fs::path d = fresh_dir("sticky");
  REQUIRE(::chmod(d.c_str(), 01777) == 0);
  const fs::path victim = fresh_dir("sticky_victim") / "precious.txt";
  std::ofstream(victim.string()) << "precious";
  const fs::path link = d / "out.jsonl";
  fs::create_symlink(victim, link);
  // Our own link is followed, as before.
  {
    OutputFile o(link.string());
    o.write("mine");
    o.commit();
  }
  CHECK(file_read_all(victim.string()) == "mine");
  std::ofstream(victim.string()) << "precious";
  if (::lchown(link.c_str(), 4242, 4242) != 0) {
    WARN("not root: cannot give the link to another user; the refusal is not exercised here");
  } else {
    const std::string err = error_of([&] { OutputFile o(link.string()); });
    CHECK(err.find("owned by uid 4242") != std::string::npos);
    CHECK(err.find("protected_symlinks") != std::string::npos);
    CHECK(file_read_all(victim.string()) == "precious");
    CHECK(temps_in(d).empty());
  }
  fs::remove_all(d);
  fs::remove_all(victim.parent_path());
}
