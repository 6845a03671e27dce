#include "core/model/torch/bpe_tokenizer.h"

#include <algorithm>
#include <climits>

#include "core/common/error.h"
#include "core/config/json_reader.h"

namespace triescope {

using json = nlohmann::json;

namespace {
std::string utf8_encode(uint32_t cp) {
  std::string s;
  if (cp < 0x80) {
    s += static_cast<char>(cp);
  } else if (cp < 0x800) {
    s += static_cast<char>(0xc0 | (cp >> 6));
    s += static_cast<char>(0x80 | (cp & 0x3f));
  } else if (cp < 0x10000) {
    s += static_cast<char>(0xe0 | (cp >> 12));
    s += static_cast<char>(0x80 | ((cp >> 6) & 0x3f));
    s += static_cast<char>(0x80 | (cp & 0x3f));
  } else {
    s += static_cast<char>(0xf0 | (cp >> 18));
    s += static_cast<char>(0x80 | ((cp >> 12) & 0x3f));
    s += static_cast<char>(0x80 | ((cp >> 6) & 0x3f));
    s += static_cast<char>(0x80 | (cp & 0x3f));
  }
  return s;
}

// Length of the UTF-8 sequence starting at s[i] (1 for a stray byte, so
// invalid input still advances and is byte-encoded unchanged).
size_t utf8_len(const std::string& s, size_t i, uint32_t* cp) {
  const auto c = static_cast<unsigned char>(s[i]);
  size_t n = c < 0x80 ? 1 : (c >> 5) == 6 ? 2 : (c >> 4) == 14 ? 3 : (c >> 3) == 30 ? 4 : 0;
  if (n == 0 || i + n > s.size()) {
    *cp = c;
    return 1;
  }
  uint32_t v = n == 1 ? c : n == 2 ? (c & 0x1fu) : n == 3 ? (c & 0x0fu) : (c & 0x07u);
  for (size_t k = 1; k < n; ++k) {
    const auto b = static_cast<unsigned char>(s[i + k]);
    if ((b >> 6) != 2) {
      *cp = c;
      return 1;
    }
    v = (v << 6) | (b & 0x3fu);
  }
  *cp = v;
  return n;
}

bool utf8_valid(const std::string& s) {
  for (size_t i = 0; i < s.size();) {
    uint32_t cp;
    const size_t n = utf8_len(s, i, &cp);
    if (n == 1 && static_cast<unsigned char>(s[i]) >= 0x80) return false;
    i += n;
  }
  return true;
}

enum class Cls { letter, number, space, other };

Cls classify(uint32_t c) {
  if (c < 0x80) {
    if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z')) return Cls::letter;
    if (c >= '0' && c <= '9') return Cls::number;
    if (c == ' ' || (c >= 0x09 && c <= 0x0d)) return Cls::space;
    return Cls::other;
  }
  if (c == 0x85 || c == 0xa0 || c == 0x1680 || (c >= 0x2000 && c <= 0x200a) || c == 0x2028 || c == 0x2029 ||
      c == 0x202f || c == 0x205f || c == 0x3000)
    return Cls::space;
  if (c == 0xb2 || c == 0xb3 || c == 0xb9 || (c >= 0xbc && c <= 0xbe) || (c >= 0x660 && c <= 0x669) ||
      (c >= 0xff10 && c <= 0xff19))
    return Cls::number;
  if ((c >= 0x80 && c <= 0xbf && c != 0xaa && c != 0xb5 && c != 0xba) || c == 0xd7 || c == 0xf7 ||
      (c >= 0x2010 && c <= 0x205e) || (c >= 0x20a0 && c <= 0x20cf) || (c >= 0x2100 && c <= 0x214f) ||
      (c >= 0x2190 && c <= 0x2bff) || (c >= 0x3001 && c <= 0x303f) || (c >= 0xfe30 && c <= 0xfe4f) ||
      (c >= 0xff01 && c <= 0xff0f) || (c >= 0xff1a && c <= 0xff20) || (c >= 0xff3b && c <= 0xff40) ||
      (c >= 0xff5b && c <= 0xff65) || (c >= 0x1f000 && c <= 0x1faff))
    return Cls::other;
  return Cls::letter;
}
}  // namespace

std::vector<std::string> BpeTokenizer::gpt2_split(const std::string& text) {
  std::vector<uint32_t> cp;
  std::vector<size_t> at;  // byte offset of each code point, plus the end
  for (size_t i = 0; i < text.size();) {
    uint32_t c;
    at.push_back(i);
    i += utf8_len(text, i, &c);
    cp.push_back(c);
  }
  at.push_back(text.size());
  const size_t n = cp.size();
  std::vector<std::string> out;
  auto emit = [&](size_t a, size_t b) { out.push_back(text.substr(at[a], at[b] - at[a])); };
  auto run = [&](size_t j, Cls k) {
    while (j < n && classify(cp[j]) == k) ++j;
    return j;
  };
  size_t i = 0;
  while (i < n) {
    if (cp[i] == '\'' && i + 1 < n) {
      const uint32_t a = cp[i + 1], b = i + 2 < n ? cp[i + 2] : 0;
      if ((a == 'r' && b == 'e') || (a == 'v' && b == 'e') || (a == 'l' && b == 'l')) {
        emit(i, i + 3);
        i += 3;
        continue;
      }
      if (a == 's' || a == 't' || a == 'm' || a == 'd') {
        emit(i, i + 2);
        i += 2;
        continue;
      }
    }
    const size_t s = (cp[i] == ' ' && i + 1 < n && classify(cp[i + 1]) != Cls::space) ? i + 1 : i;
    const Cls k = classify(cp[s]);
    if (k == Cls::letter || k == Cls::number || k == Cls::other) {
      const size_t e = run(s, k);
      emit(i, e);
      i = e;
      continue;
    }
    const size_t e = run(i, Cls::space);  // \s+(?!\S) then \s+
    const size_t stop = (e == n || e - i == 1) ? e : e - 1;
    emit(i, stop);
    i = stop;
  }
  return out;
}

BpeTokenizer BpeTokenizer::load(const std::string& path) { return parse(json_load_file(path), path); }

BpeTokenizer BpeTokenizer::parse(const json& j, const std::string& origin) {
  BpeTokenizer t;
  TS_CHECK(j.is_object() && j.contains("model") && j["model"].is_object(), origin << ": model must be an object");
  const json& m = j["model"];
  if (m.contains("type")) {
    TS_CHECK(m["type"] == "BPE", origin << ": model.type must be \"BPE\", got " << m["type"].dump());
  }
  TS_CHECK(!(m.contains("byte_fallback") && m["byte_fallback"] == true),
           origin << ": model.byte_fallback is set: SentencePiece-style BPE is not supported, only byte-level BPE");
  // Byte-to-unicode map (GPT-2): printable Latin-1 bytes map to themselves,
  // the rest to U+0100 onwards in byte order, so every byte is one visible char.
  int extra = 0;
  for (int b = 0; b < 256; ++b) {
    const bool keep = (b >= '!' && b <= '~') || (b >= 0xa1 && b <= 0xac) || (b >= 0xae && b <= 0xff);
    t.byte_char_[b] = utf8_encode(keep ? static_cast<uint32_t>(b) : static_cast<uint32_t>(256 + extra++));
    t.char_byte_[t.byte_char_[b]] = static_cast<uint8_t>(b);
  }
  // Pre-tokenizer: ByteLevel (GPT-2 split), optionally after Digits(individual).
  bool byte_level = false;
  std::vector<json> pres;
  if (j.contains("pre_tokenizer") && !j["pre_tokenizer"].is_null()) {
    const json& p = j["pre_tokenizer"];
    if (p.value("type", "") == "Sequence" && p.contains("pretokenizers")) {
      for (const auto& x : p["pretokenizers"]) pres.push_back(x);
    } else {
      pres.push_back(p);
    }
  }
  std::vector<std::string> names;
  for (const auto& p : pres) {
    const std::string type = p.value("type", "");
    names.push_back(type);
    if (type == "ByteLevel") {
      byte_level = true;
      t.add_prefix_space_ = p.value("add_prefix_space", false);
    } else if (type == "Digits") {
      t.individual_digits_ = p.value("individual_digits", false);
    } else if (type == "Split") {
      // Llama-3 / Qwen style regex split: approximated by the GPT-2 split (docs/transformer.md).
    } else {
      TS_FAIL(origin << ": pre_tokenizer type \"" << type << "\" is not supported (ByteLevel, Digits, Split)");
    }
  }
  if (!byte_level && j.contains("decoder") && j["decoder"].is_object()) byte_level = j["decoder"].value("type", "") == "ByteLevel";
  TS_CHECK(byte_level, origin << ": no ByteLevel pre_tokenizer or decoder: only byte-level BPE is supported");
  for (size_t i = 0; i < names.size(); ++i) t.pretokenizer_ += (i ? "+" : "") + names[i];

  if (m.contains("ignore_merges") && m["ignore_merges"].is_boolean()) t.ignore_merges_ = m["ignore_merges"].get<bool>();
  TS_CHECK(m.contains("vocab") && m["vocab"].is_object(), origin << ": model.vocab must be an object {token: id}");
  int32_t max_id = -1;
  for (auto& [tok, id] : m["vocab"].items()) {
    TS_CHECK(id.is_number_integer() && id.get<int64_t>() >= 0 && id.get<int64_t>() < (1 << 24),
             origin << ": model.vocab[\"" << tok << "\"] must be a non-negative id, got " << id.dump());
    t.vocab_[tok] = id.get<int32_t>();
    max_id = std::max(max_id, id.get<int32_t>());
  }
  std::vector<std::pair<std::string, int32_t>> added;
  if (j.contains("added_tokens") && j["added_tokens"].is_array()) {
    for (size_t i = 0; i < j["added_tokens"].size(); ++i) {
      const json& a = j["added_tokens"][i];
      TS_CHECK(a.is_object() && a.contains("id") && a["id"].is_number_integer() && a.contains("content") &&
                   a["content"].is_string() && !a["content"].get<std::string>().empty(),
               origin << ": added_tokens[" << i << "] needs an integer id and a non-empty content");
      added.emplace_back(a["content"].get<std::string>(), a["id"].get<int32_t>());
      TS_CHECK(added.back().second >= 0, origin << ": added_tokens[" << i << "].id is negative");
      max_id = std::max(max_id, added.back().second);
    }
  }
  t.id_to_token_.assign(static_cast<size_t>(max_id + 1), "");
  t.is_added_.assign(static_cast<size_t>(max_id + 1), 0);
  for (const auto& [tok, id] : t.vocab_) t.id_to_token_[static_cast<size_t>(id)] = tok;
  for (const auto& [content, id] : added) {
    t.id_to_token_[static_cast<size_t>(id)] = content;
    t.is_added_[static_cast<size_t>(id)] = 1;
    t.added_.push_back({content, id});
  }
  std::stable_sort(t.added_.begin(), t.added_.end(),
                   [](const Added& a, const Added& b) { return a.content.size() > b.content.size(); });

  if (m.contains("merges")) {
    TS_CHECK(m["merges"].is_array(), origin << ": model.merges must be an array");
    const json& merges = m["merges"];
    for (size_t i = 0; i < merges.size(); ++i) {
      std::string a, b;
      if (merges[i].is_string()) {
        const std::string s = merges[i].get<std::string>();
        const size_t sp = s.find(' ', 1);
        TS_CHECK(sp != std::string::npos, origin << ": model.merges[" << i << "] = \"" << s << "\" must be \"a b\"");
        a = s.substr(0, sp);
        b = s.substr(sp + 1);
      } else {
        TS_CHECK(merges[i].is_array() && merges[i].size() == 2 && merges[i][0].is_string() && merges[i][1].is_string(),
                 origin << ": model.merges[" << i << "] must be \"a b\" or [\"a\", \"b\"]");
        a = merges[i][0].get<std::string>();
        b = merges[i][1].get<std::string>();
      }
      t.merge_rank_.emplace(a + " " + b, static_cast<int32_t>(i));
    }
  }
  // Printable ASCII and space must have their byte-level tokens; other bytes
  // may lack one (SmolLM's vocabulary has no token for 0x04, 0xc0, 0xf5..0xff:
  // bytes its training text never held); encoding such a byte is an error.
  for (int b = 0x20; b < 0x7f; ++b)
    TS_CHECK(t.vocab_.count(t.byte_char_[b]), origin << ": model.vocab lacks the byte-level token for byte " << b
                                                      << ": not a byte-level BPE vocabulary");
  return t;
}

std::optional<int32_t> BpeTokenizer::token_id(const std::string& s) const {
  auto it = vocab_.find(s);
  if (it == vocab_.end()) return std::nullopt;
  return it->second;
}

void BpeTokenizer::encode_plain(const std::string& text, std::vector<int32_t>& out) const {
  std::vector<std::string> pieces;
  if (individual_digits_) {  // Digits(individual_digits): each digit its own piece, before the byte-level split
    std::string cur;
    for (char c : text) {
      if (c >= '0' && c <= '9') {
        if (!cur.empty()) pieces.push_back(cur);
        cur.clear();
        pieces.emplace_back(1, c);
      } else {
        cur += c;
      }
    }
    if (!cur.empty()) pieces.push_back(cur);
  } else {
    pieces.push_back(text);
  }
  std::vector<std::string> sym;
  for (const auto& piece : pieces)
    for (const auto& word : gpt2_split(piece)) {
      sym.clear();
      for (unsigned char c : word) sym.push_back(byte_char_[c]);
      if (ignore_merges_ && sym.size() > 1) {
        std::string whole;
        for (const auto& x : sym) whole += x;
        if (auto it = vocab_.find(whole); it != vocab_.end()) {
          out.push_back(it->second);
          continue;
        }
      }
      // Merge the lowest-ranked adjacent pair, all its occurrences left to right, until none is ranked.
      while (sym.size() > 1) {
        int32_t best = INT32_MAX;
        for (size_t i = 0; i + 1 < sym.size(); ++i) {
          auto it = merge_rank_.find(sym[i] + " " + sym[i + 1]);
          if (it != merge_rank_.end()) best = std::min(best, it->second);
        }
        if (best == INT32_MAX) break;
        std::vector<std::string> next;
        for (size_t i = 0; i < sym.size(); ++i) {
          if (i + 1 < sym.size()) {
            auto it = merge_rank_.find(sym[i] + " " + sym[i + 1]);
            if (it != merge_rank_.end() && it->second == best) {
              next.push_back(sym[i] + sym[i + 1]);
              ++i;
              continue;
            }
          }
          next.push_back(sym[i]);
        }
        sym.swap(next);
      }
      for (const auto& s : sym) {
        auto it = vocab_.find(s);
        TS_CHECK(it != vocab_.end(), "tokenizer: merged symbol \"" << s << "\" is not in the vocabulary");
        out.push_back(it->second);
      }
    }
}

std::vector<int32_t> BpeTokenizer::encode(const std::string& text) const {
  std::vector<int32_t> out;
  std::string plain;
  bool first = true;
  auto flush = [&]() {
    if (plain.empty()) return;
    encode_plain(add_prefix_space_ && first && plain[0] != ' ' ? " " + plain : plain, out);
    plain.clear();
    first = false;
  };
  for (size_t i = 0; i < text.size();) {
    const Added* hit = nullptr;
    for (const auto& a : added_)
      if (text.compare(i, a.content.size(), a.content) == 0) {
        hit = &a;
        break;
      }
    if (hit) {
      flush();
      out.push_back(hit->id);
      first = false;
      i += hit->content.size();
    } else {
      plain += text[i++];
    }
  }
  flush();
  return out;
}

std::string BpeTokenizer::decode(const std::vector<int32_t>& ids) const {
  std::string out;
  for (size_t k = 0; k < ids.size(); ++k) {
    const int32_t id = ids[k];
    TS_CHECK(id >= 0 && id < vocab_size(), "tokenizer: decode: ids[" << k << "] = " << id << " outside [0, " << vocab_size() << ")");
    const std::string& s = id_to_token_[static_cast<size_t>(id)];
    if (is_added_[static_cast<size_t>(id)]) {
      out += s;
      continue;
    }
    for (size_t i = 0; i < s.size();) {
      uint32_t cp;
      const size_t n = utf8_len(s, i, &cp);
      auto it = char_byte_.find(s.substr(i, n));
      if (it != char_byte_.end()) out += static_cast<char>(it->second);
      else out += s.substr(i, n);
      i += n;
    }
  }
  return out;
}

std::string BpeTokenizer::token_display(int32_t id) const {
  if (id < 0 || id >= vocab_size()) return std::to_string(id);
  const std::string d = decode({id});
  return utf8_valid(d) ? d : id_to_token_[static_cast<size_t>(id)];
}

}  // namespace triescope
