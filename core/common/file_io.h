// Whole-file reads and atomic (temporary + rename) writes. Errors are Error
// naming the path.
#pragma once
#include <string>

namespace triescope {

// The whole file, bytes as they are. Throws "<path>: cannot open for reading",
// "<path>: read failed ..." or "<path>: out of memory ..." (never a part of
// the file as if it were all of it).
std::string file_read_all(const std::string& path);

// Writes `text` to `path` through OutputFile (core/common/output_file.h): a
// regular file atomically (a temporary renamed into place), a device, FIFO
// or "-" directly. Throws naming the path.
void file_write_atomic(const std::string& path, const std::string& text);

// Temporaries a signal must not leave behind: a writer tracks its temporary
// while it writes and untracks it once renamed into place or removed.
void file_temp_track(const std::string& tmp);
void file_temp_untrack(const std::string& tmp);
// Installs SIGINT, SIGTERM, SIGHUP, SIGQUIT and SIGXFSZ (`ulimit -f`) handlers that remove every tracked
// temporary and then die of the same signal (the caller sees the usual
// status). For programs (the CLI); a library leaves signals alone.
void file_temp_remove_on_signals();

}  // namespace triescope
