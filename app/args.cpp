#include <algorithm>
#include <cstdint>
#include <exception>
#include <optional>
#include <sstream>

#include "app/commands.h"
#include "core/common/error.h"

namespace triescope::cli {

std::optional<int64_t> integer_parse(const std::string& s) {
  size_t used = 0;
  long long v = 0;
  try {
    v = std::stoll(s, &used);
  } catch (const std::exception&) {
    return std::nullopt;
  }
  if (used != s.size()) return std::nullopt;
  return v;
}

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
  const std::optional<int64_t> v = integer_parse(s);
  TS_CHECK(v, "--" << name << " must be an integer, got \"" << s << "\"");
  TS_CHECK(*v >= lo && *v <= hi, "--" << name << " must be in [" << lo << ", " << hi << "], got " << *v);
  return *v;
}

std::vector<int32_t> token_ids_parse(const std::string& text, const std::string& what) {
  std::vector<int32_t> ids;
  std::istringstream in(text);
  std::string word;
  while (in >> word) {
    const std::optional<int64_t> v = integer_parse(word);
    TS_CHECK(v && *v >= 0 && *v <= INT32_MAX, what << " \"" << word << "\" is not a token id");
    ids.push_back(static_cast<int32_t>(*v));
  }
  return ids;
}

std::string dtype_option_parse(const std::string& command, const std::string& value) {
  if (value == "fp32" || value == "float32") return "float32";
  TS_CHECK(value == "bf16" || value == "bfloat16", command << ": --dtype must be fp32 or bf16, got \"" << value << "\"");
  return "bfloat16";
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
