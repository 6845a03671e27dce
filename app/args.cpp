#include <algorithm>
#include <exception>

#include "app/commands.h"
#include "core/common/error.h"

namespace triescope::cli {

bool ParsedArgs::has(const std::string& name) const {
  return std::any_of(options.begin(), options.end(), [&](auto& o) { return o.first == name; });
}

std::string ParsedArgs::get(const std::string& name, const std::string& dflt) const {
  for (auto& o : options)
    if (o.first == name) return o.second;
  return dflt;
}

int64_t ParsedArgs::get_int(const std::string& name, int64_t lo, int64_t hi, int64_t dflt) const {
  if (!has(name)) return dflt;
  const std::string s = get(name);
  size_t used = 0;
  long long v = 0;
  try {
    v = std::stoll(s, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  TS_CHECK(used == s.size() && !s.empty(), "--" << name << " must be an integer, got \"" << s << "\"");
  TS_CHECK(v >= lo && v <= hi, "--" << name << " must be in [" << lo << ", " << hi << "], got " << v);
  return v;
}

ParsedArgs parse_args(const Args& args, const std::vector<std::string>& valued, const std::vector<std::string>& flags) {
  ParsedArgs p;
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    if (a.size() > 2 && a.rfind("--", 0) == 0) {
      std::string name = a.substr(2), value;
      const auto eq = name.find('=');
      if (eq != std::string::npos) {
        value = name.substr(eq + 1);
        name = name.substr(0, eq);
      }
      if (std::find(flags.begin(), flags.end(), name) != flags.end()) {
        p.options.emplace_back(name, "");
      } else if (std::find(valued.begin(), valued.end(), name) != valued.end()) {
        if (eq == std::string::npos) {
          TS_CHECK(i + 1 < args.size(), "option --" << name << " needs a value");
          value = args[++i];
        }
        p.options.emplace_back(name, value);
      } else {
        TS_FAIL("unknown option --" << name);
      }
    } else {
      p.positional.push_back(a);
    }
  }
  return p;
}

}  // namespace triescope::cli
