// cu_host_rewrite IN.cu OUT.cpp: turns a .cu file into C++ for the host
// runtime. Only what no macro can express is rewritten, in place, keeping
// every line where it was (a #line directive names the original file, so
// compiler messages, sanitizer reports and the runtime's errors point at the
// .cu source):
//   kernel<<<grid, block, shmem, stream>>>(args)
//       -> ::triescope::cuda_host::launch_kernel(kernel, {"kernel", bounds}, grid, block, shmem, stream)(args)
//   __shared__ T a[N], b;            -> per-block storage (block_shared<T[N]>)
//   extern __shared__ T s[];         -> the launch's dynamic shared memory
//   #pragma unroll                   -> removed (g++ has no such pragma)
// __launch_bounds__ of each kernel are carried to its launches, so a launch
// over them fails as on a device. Comments, strings and character literals
// are never touched.
#include <cctype>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

namespace {

struct Source {
  std::string text;
  std::vector<bool> code;  // false inside comments and literals
};

Source classify(const std::string& t) {
  Source s{t, std::vector<bool>(t.size(), true)};
  size_t i = 0;
  while (i < t.size()) {
    if (t.compare(i, 2, "//") == 0) {
      while (i < t.size() && t[i] != '\n') s.code[i++] = false;
    } else if (t.compare(i, 2, "/*") == 0) {
      const size_t e = t.find("*/", i + 2);
      const size_t end = e == std::string::npos ? t.size() : e + 2;
      while (i < end) s.code[i++] = false;
    } else if (t[i] == 'R' && i + 1 < t.size() && t[i + 1] == '"' && (i == 0 || !(std::isalnum(static_cast<unsigned char>(t[i - 1])) || t[i - 1] == '_'))) {
      const size_t open = t.find('(', i + 2);
      if (open == std::string::npos) throw std::runtime_error("unterminated raw string");
      const std::string close = ")" + t.substr(i + 2, open - i - 2) + "\"";
      const size_t e = t.find(close, open);
      const size_t end = e == std::string::npos ? t.size() : e + close.size();
      while (i < end) s.code[i++] = false;
    } else if (t[i] == '"' || t[i] == '\'') {
      const char q = t[i];
      s.code[i++] = false;
      while (i < t.size() && t[i] != q && t[i] != '\n') {
        if (t[i] == '\\') s.code[i++] = false;
        if (i < t.size()) s.code[i++] = false;
      }
      if (i < t.size()) s.code[i++] = false;
    } else {
      ++i;
    }
  }
  return s;
}

bool ident_char(char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; }

size_t count_newlines(const std::string& s) {
  size_t n = 0;
  for (char c : s) n += c == '\n';
  return n;
}

std::string trim(const std::string& s) {
  const size_t b = s.find_first_not_of(" \t\r\n");
  if (b == std::string::npos) return {};
  const size_t e = s.find_last_not_of(" \t\r\n");
  return s.substr(b, e - b + 1);
}

// Top-level comma split (parentheses, brackets, braces).
std::vector<std::string> split_commas(const std::string& s) {
  std::vector<std::string> out;
  int depth = 0;
  size_t start = 0;
  for (size_t i = 0; i < s.size(); ++i) {
    const char c = s[i];
    if (c == '(' || c == '[' || c == '{') ++depth;
    else if (c == ')' || c == ']' || c == '}') --depth;
    else if (c == ',' && depth == 0) {
      out.push_back(s.substr(start, i - start));
      start = i + 1;
    }
  }
  out.push_back(s.substr(start));
  return out;
}

// Drops __align__(...) / alignas(...) from a declaration's type (per-block
// storage is at least 16-byte aligned, and alignof the type is honoured).
std::string strip_alignment(std::string t) {
  for (const char* kw : {"__align__", "alignas"}) {
    for (size_t p; (p = t.find(kw)) != std::string::npos;) {
      size_t i = t.find('(', p);
      int depth = 0;
      size_t e = i;
      for (; e < t.size(); ++e) {
        if (t[e] == '(') ++depth;
        else if (t[e] == ')' && --depth == 0) break;
      }
      t.erase(p, e + 1 - p);
    }
  }
  return trim(t);
}

class Rewriter {
 public:
  explicit Rewriter(const std::string& path, const std::string& text) : path_(path), src_(classify(text)) {}

  std::string run() {
    collect_launch_bounds();
    std::string out;
    const std::string& t = src_.text;
    size_t i = 0;
    while (i < t.size()) {
      if (src_.code[i] && at_line_start(i) && pragma_unroll(i)) {
        const size_t e = t.find('\n', i);
        i = e == std::string::npos ? t.size() : e;
        continue;
      }
      if (src_.code[i] && word_at(i, "__shared__")) {
        i = rewrite_shared(i, out);
        continue;
      }
      if (src_.code[i] && t.compare(i, 3, "<<<") == 0) {
        i = rewrite_launch(i, out);
        continue;
      }
      out += t[i++];
    }
    return out;
  }

 private:
  [[noreturn]] void fail(size_t pos, const std::string& what) const {
    throw std::runtime_error(path_ + ":" + std::to_string(count_newlines(src_.text.substr(0, pos)) + 1) + ": " + what);
  }

  bool word_at(size_t i, const char* w) const {
    const std::string& t = src_.text;
    const size_t n = std::char_traits<char>::length(w);
    return t.compare(i, n, w) == 0 && (i == 0 || !ident_char(t[i - 1])) && (i + n >= t.size() || !ident_char(t[i + n]));
  }

  bool at_line_start(size_t i) const {
    const std::string& t = src_.text;
    size_t j = i;
    while (j > 0 && (t[j - 1] == ' ' || t[j - 1] == '\t')) --j;
    return j == 0 || t[j - 1] == '\n';
  }

  bool pragma_unroll(size_t i) const {
    const std::string& t = src_.text;
    if (t[i] != '#') return false;
    const size_t e = t.find('\n', i);
    std::istringstream line(t.substr(i + 1, (e == std::string::npos ? t.size() : e) - i - 1));
    std::string a, b;
    line >> a >> b;
    return a == "pragma" && (b == "unroll" || b.rfind("unroll(", 0) == 0);
  }

  // __launch_bounds__(max[, min]) name( -> bounds_[name]
  void collect_launch_bounds() {
    const std::string& t = src_.text;
    for (size_t i = 0; i < t.size(); ++i) {
      if (!src_.code[i] || !word_at(i, "__launch_bounds__")) continue;
      size_t p = t.find('(', i);
      const size_t close = match_forward(p, '(', ')');
      const std::vector<std::string> args = split_commas(t.substr(p + 1, close - p - 1));
      size_t j = close + 1;
      while (j < t.size() && std::isspace(static_cast<unsigned char>(t[j]))) ++j;
      size_t k = j;
      while (k < t.size() && ident_char(t[k])) ++k;
      if (k == j) fail(i, "__launch_bounds__ not followed by the kernel's name");
      bounds_[t.substr(j, k - j)] = {trim(args[0]), args.size() > 1 ? trim(args[1]) : "0"};
    }
  }

  size_t match_forward(size_t open_pos, char open, char close) const {
    const std::string& t = src_.text;
    int depth = 0;
    for (size_t i = open_pos; i < t.size(); ++i) {
      if (!src_.code[i]) continue;
      if (t[i] == open) ++depth;
      else if (t[i] == close && --depth == 0) return i;
    }
    fail(open_pos, std::string("no matching '") + close + "'");
  }

  // [static] __shared__ decl; -> per-block storage, one declarator at a time.
  size_t rewrite_shared(size_t i, std::string& out) {
    const std::string& t = src_.text;
    // The declaration's end: the first ';' outside brackets.
    int depth = 0;
    size_t end = i;
    for (; end < t.size(); ++end) {
      if (!src_.code[end]) continue;
      const char c = t[end];
      if (c == '(' || c == '[' || c == '{') ++depth;
      else if (c == ')' || c == ']' || c == '}') --depth;
      else if (c == ';' && depth == 0) break;
    }
    if (end == t.size()) fail(i, "__shared__ declaration without ';'");
    // "extern" just before __shared__ (already copied to out): take it back.
    bool is_extern = false;
    {
      size_t o = out.size();
      while (o > 0 && (out[o - 1] == ' ' || out[o - 1] == '\t')) --o;
      if (o >= 6 && out.compare(o - 6, 6, "extern") == 0 && (o == 6 || !ident_char(out[o - 7]))) {
        is_extern = true;
        out.erase(o - 6);
      }
    }
    const std::string decl = t.substr(i + 10, end - i - 10);
    const std::string newlines(count_newlines(decl), '\n');
    std::vector<std::string> parts = split_commas(decl);
    // The first declarator carries the type: "T name[dims]" or "T name".
    std::string first = trim(parts[0]);
    size_t name_end = first.find('[');
    if (name_end == std::string::npos) name_end = first.size();
    while (name_end > 0 && std::isspace(static_cast<unsigned char>(first[name_end - 1]))) --name_end;
    size_t name_begin = name_end;
    while (name_begin > 0 && ident_char(first[name_begin - 1])) --name_begin;
    if (name_begin == name_end || name_begin == 0) fail(i, "cannot read the type and name of this __shared__ declaration");
    const std::string type = strip_alignment(first.substr(0, name_begin));
    parts[0] = first.substr(name_begin);
    std::string repl;
    for (const std::string& p : parts) {
      const std::string d = trim(p);
      size_t ne = 0;
      while (ne < d.size() && ident_char(d[ne])) ++ne;
      const std::string name = d.substr(0, ne), dims = trim(d.substr(ne));
      if (name.empty()) fail(i, "cannot read a declarator of this __shared__ declaration");
      if (is_extern) {
        if (dims != "[]") fail(i, "extern __shared__ must be an unsized array");
        repl += type + "* const " + name + " = ::triescope::cuda_host::block_dynamic_shared<" + type + ">(); ";
      } else {
        const std::string tag = "triescope_shared_tag_" + std::to_string(++tags_);
        repl += "static const char " + tag + " = 0; auto& " + name + " = ::triescope::cuda_host::block_shared<" + type + dims + ">(&" +
                tag + "); ";
      }
    }
    out += repl + newlines;
    return end + 1;
  }

  // name<<<cfg>>> -> ::triescope::cuda_host::launch_kernel(name, site, cfg)
  size_t rewrite_launch(size_t i, std::string& out) {
    const std::string& t = src_.text;
    // The kernel expression already copied to out: an id-expression, maybe
    // qualified, maybe with template arguments.
    size_t o = out.size();
    while (o > 0 && std::isspace(static_cast<unsigned char>(out[o - 1]))) --o;
    const size_t expr_end = o;
    if (o > 0 && out[o - 1] == '>') {
      int depth = 0;
      for (; o > 0; --o) {
        if (out[o - 1] == '>') ++depth;
        else if (out[o - 1] == '<' && --depth == 0) {
          --o;
          break;
        }
      }
    }
    while (o > 0 && (ident_char(out[o - 1]) || out[o - 1] == ':')) --o;
    const std::string kernel = out.substr(o, expr_end - o);
    if (kernel.empty()) fail(i, "<<< without a kernel name before it");
    // The base name, for its __launch_bounds__.
    std::string base = kernel.substr(0, kernel.find('<'));
    if (const size_t c = base.rfind("::"); c != std::string::npos) base = base.substr(c + 2);
    // The configuration: up to the matching >>>.
    int depth = 0;
    size_t j = i + 3;
    for (; j + 2 < t.size(); ++j) {
      if (!src_.code[j]) continue;
      const char c = t[j];
      if (c == '(' || c == '[' || c == '{') ++depth;
      else if (c == ')' || c == ']' || c == '}') --depth;
      else if (depth == 0 && t.compare(j, 3, ">>>") == 0) break;
    }
    if (j + 2 >= t.size()) fail(i, "<<< without >>>");
    const std::string cfg = t.substr(i + 3, j - i - 3);
    const auto b = bounds_.find(base);
    const std::string max_threads = b == bounds_.end() ? "0" : "(" + b->second.first + ")";
    const std::string min_blocks = b == bounds_.end() ? "0" : "(" + b->second.second + ")";
    out.erase(o);
    out += "::triescope::cuda_host::launch_kernel(" + kernel + ", ::triescope::cuda_host::KernelSite{\"" + kernel + "\", " + max_threads +
           ", " + min_blocks + "}, " + cfg + ")";
    return j + 3;
  }

  std::string path_;
  Source src_;
  std::map<std::string, std::pair<std::string, std::string>> bounds_;
  int tags_ = 0;
};

}  // namespace

int main(int argc, char** argv) {
  if (argc != 3) {
    std::cerr << "usage: cu_host_rewrite IN.cu OUT.cpp\n";
    return 2;
  }
  try {
    std::ifstream in(argv[1], std::ios::binary);
    if (!in) throw std::runtime_error(std::string(argv[1]) + ": cannot read");
    std::stringstream ss;
    ss << in.rdbuf();
    const std::string abs = std::filesystem::absolute(argv[1]).lexically_normal().string();
    const std::string body = Rewriter(abs, ss.str()).run();
    const std::string tmp = std::string(argv[2]) + ".tmp";
    {
      std::ofstream out(tmp, std::ios::binary);
      out << "#line 1 \"" << abs << "\"\n" << body;
      if (!out) throw std::runtime_error(tmp + ": cannot write");
    }
    std::filesystem::rename(tmp, argv[2]);
  } catch (const std::exception& e) {
    std::cerr << "cu_host_rewrite: " << e.what() << "\n";
    return 1;
  }
  return 0;
}
