// The message of the triescope::Error a call throws, or "no error": what
// reader tests compare against the exact text a user would see.
#pragma once
#include <functional>
#include <string>

#include "core/common/error.h"

namespace triescope::testing {

inline std::string error_of(const std::function<void()>& call) {
  try {
    call();
  } catch (const Error& e) {
    return e.what();
  }
  return "no error";
}

}  // namespace triescope::testing
