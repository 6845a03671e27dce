// SHA-256 (FIPS 180-4) of a byte string, as lowercase hex: the content hash
// traces record for the files a decode read (`sha256sum FILE` prints the same).
#pragma once
#include <string>
#include <string_view>

namespace triescope {

std::string sha256_hex(std::string_view bytes);

}  // namespace triescope
