// Whole-file reads and atomic (temporary + rename) writes. Errors are Error
// naming the path.
#pragma once
#include <string>

namespace triescope {

// The whole file, bytes as they are. Throws "<path>: cannot open for reading"
// or "<path>: read failed".
std::string file_read_all(const std::string& path);

// Writes `text` to `path` atomically: a temporary next to it, renamed into
// place, so a failed write never leaves a half-written file. Throws naming the path.
void file_write_atomic(const std::string& path, const std::string& text);

// The temporary a writer of `path` uses before renaming it into place
// ("<path>.tmp.<pid>").
std::string file_temp_path(const std::string& path);

}  // namespace triescope
