// One exception type for everything core/ rejects; messages name the file or
// field and what was expected, so a user can act on them.
#pragma once
#include <sstream>
#include <stdexcept>
#include <string>

namespace triescope {

class Error : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

}  // namespace triescope

// TS_CHECK(cond, "samples/x.json: beams.width must be >= 1, got " << w)
#define TS_CHECK(cond, msg)                       \
  do {                                            \
    if (!(cond)) {                                \
      std::ostringstream ts_check_os_;            \
      ts_check_os_ << msg;                        \
      throw ::triescope::Error(ts_check_os_.str()); \
    }                                             \
  } while (0)

#define TS_FAIL(msg) TS_CHECK(false, msg)
