// A test's own scratch folder under the build tree (TRIESCOPE_BINARY_DIR,
// which tests/CMakeLists.txt defines for every Catch2 test program).
#pragma once
#include <filesystem>
#include <string>

namespace triescope::test {

// build/test_tmp/<path>, emptied and created.
inline std::filesystem::path fresh_test_dir(const std::string& path) {
  const std::filesystem::path d = std::filesystem::path(TRIESCOPE_BINARY_DIR) / "test_tmp" / path;
  std::filesystem::remove_all(d);
  std::filesystem::create_directories(d);
  return d;
}

}  // namespace triescope::test
