// A list of numbers as error messages and reports write it: "[1, 2, 3]"
// (or between other brackets: "{1, 2}").
#pragma once
#include <sstream>
#include <string>
#include <vector>

namespace triescope {

template <class T>
std::string list_text(const std::vector<T>& v, const char* open = "[", const char* close = "]") {
  std::ostringstream os;
  os << open;
  for (size_t i = 0; i < v.size(); ++i) os << (i ? ", " : "") << v[i];
  os << close;
  return os.str();
}

}  // namespace triescope
