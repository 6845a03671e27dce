// Bytes from a file, made fit for an error message: at most `max_bytes` of
// them, printable ASCII as it is, anything else as \xNN, and the total length
// when cut. A message never carries raw bytes to the terminal or a 640 MB token.
#pragma once
#include <cstddef>
#include <string>
#include <string_view>

namespace triescope {

std::string text_excerpt(std::string_view bytes, size_t max_bytes = 40);

}  // namespace triescope
