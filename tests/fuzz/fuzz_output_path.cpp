// The output writer's path handling (core/common/output_file.h) on what the
// input builds in a scratch folder: the first byte picks what is at the
// output path (nothing, a file, a folder, a symlink to a file / to nothing /
// to /dev/null / in a loop, a stale temporary), the next bytes a relative
// name, the rest the content, written whole or abandoned. Invariants: only
// Error escapes; no temporary is left; a committed regular output holds the
// content; a link stays a link; /dev/null stays a device.
#include <ctime>
#include <filesystem>
#include <fstream>
#include <sstream>

#include <sys/stat.h>
#include <unistd.h>
#include <utime.h>

#include "core/common/file_io.h"
#include "core/common/output_file.h"
#include "tests/fuzz/fuzz_target.h"

using namespace triescope;
namespace fs = std::filesystem;

namespace {
bool no_temps(const fs::path& dir) {
  for (auto& e : fs::recursive_directory_iterator(dir, fs::directory_options::skip_permission_denied))
    if (e.path().filename().string().find(kTempMarker) != std::string::npos) return false;
  return true;
}
}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 2) return 0;
  static const fs::path root = fs::temp_directory_path() / ("triescope-fuzz-out-" + std::to_string(::getpid()));
  fs::remove_all(root);
  fs::create_directories(root / "sub");
  const uint8_t kind = data[0] % 8;
  const bool commit = (data[0] & 0x80) == 0;
  // A name of [a-z./] characters, at most 12: "a", "sub/a", "a/", "..", ...
  const size_t name_len = std::min<size_t>(data[1] % 13, size - 2);
  std::string name;
  for (size_t i = 0; i < name_len; ++i) name += "ab./"[data[2 + i] % 4];
  for (size_t k; (k = name.find("..")) != std::string::npos;) name[k] = 'b';  // never out of the scratch folder
  if (name.empty()) name = "out";
  const std::string content = fuzz::as_string(data + 2 + name_len, size - 2 - name_len);
  const fs::path p = root / name;
  std::error_code ec;
  switch (kind) {
    case 1: std::ofstream(p) << "old"; break;
    case 2: fs::create_directories(p, ec); break;
    case 3: std::ofstream(root / "target") << "old"; fs::create_symlink(root / "target", p, ec); break;
    case 4: fs::create_symlink("missing", p, ec); break;
    case 5: fs::create_symlink("/dev/null", p, ec); break;
    case 6: fs::create_symlink(p.filename().string() + ".loop", p, ec); fs::create_symlink(p.filename(), p.string() + ".loop", ec); break;
    case 7: {  // a dead writer's temporary, old enough to be removed
      const std::string stale = p.string() + std::string(kTempMarker) + "1.0.dead";
      std::ofstream(stale) << "stale";
      const struct utimbuf old{std::time(nullptr) - 60, std::time(nullptr) - 60};
      ::utime(stale.c_str(), &old);
      break;
    }
    default: break;
  }
  const bool was_link = fs::is_symlink(fs::symlink_status(p, ec));
  bool committed = false;
  fuzz::accepted([&] {
    OutputFile o(p.string());
    o.write(content);
    if (commit) {
      o.commit();
      committed = true;
    }
  });
  FUZZ_CHECK(kind == 7 || no_temps(root), "a temporary was left behind");
  if (was_link) FUZZ_CHECK(fs::is_symlink(fs::symlink_status(p, ec)), "a symlink at the output path was replaced");
  struct stat st {};
  FUZZ_CHECK(::stat("/dev/null", &st) == 0 && S_ISCHR(st.st_mode), "/dev/null is no longer a device");
  if (committed && fs::is_regular_file(p, ec) && kind != 5) {
    std::ifstream in(p, std::ios::binary);
    std::stringstream ss;
    ss << in.rdbuf();
    FUZZ_CHECK(ss.str() == content, "the committed file does not hold what was written");
  }
  fs::remove_all(root);
  return 0;
}
