// One exception type for everything core/ rejects; messages name the file or
// field and what was expected, so a user can act on them.
#pragma once
#include <new>
#include <sstream>
#include <stdexcept>
#include <string>

namespace triescope {

class Error : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// Runs a reader of `origin`. What escapes it from the standard or the JSON
// library -- bad_alloc or length_error from a size no check caught, a JSON
// type error -- becomes an Error naming `origin`, so no input ends as an
// "internal error". Fuzzing builds (TRIESCOPE_FUZZING) let those through:
// there each one is a finding, a check that is missing.
template <class F>
auto reader_boundary(const std::string& origin, F&& read) -> decltype(read()) {
#ifdef TRIESCOPE_FUZZING
  (void)origin;
  return read();
#else
  try {
    return read();
  } catch (const Error&) {
    throw;
  } catch (const std::bad_alloc&) {
    throw Error(origin + ": out of memory while reading it (a declared size beyond what the file holds?)");
  } catch (const std::exception& e) {
    throw Error(origin + ": unexpected content: " + e.what());
  }
#endif
}

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
