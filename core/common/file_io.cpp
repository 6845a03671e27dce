#include "core/common/file_io.h"

#include <cstdio>
#include <fstream>
#include <sstream>
#include <unistd.h>

#include "core/common/error.h"

namespace triescope {

std::string file_read_all(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  TS_CHECK(in, path << ": cannot open for reading");
  std::ostringstream ss;
  ss << in.rdbuf();
  TS_CHECK(!in.bad(), path << ": read failed");
  return ss.str();
}

std::string file_temp_path(const std::string& path) { return path + ".tmp." + std::to_string(::getpid()); }

void file_write_atomic(const std::string& path, const std::string& text) {
  const std::string tmp = file_temp_path(path);
  std::FILE* f = std::fopen(tmp.c_str(), "wb");
  TS_CHECK(f != nullptr, path << ": cannot open for writing");
  const bool ok = std::fwrite(text.data(), 1, text.size(), f) == text.size();
  const bool closed = std::fclose(f) == 0;
  if (!ok || !closed || std::rename(tmp.c_str(), path.c_str()) != 0) {
    std::remove(tmp.c_str());
    TS_FAIL(path << ": write failed");
  }
}

}  // namespace triescope
