#include "core/model/torch/bpe_tokenizer.h"

#include <algorithm>
#include <queue>
#include <sstream>

#include "core/common/error.h"
#include "core/config/json_reader.h"
#include "core/model/torch/unicode_class.h"
#include "core/model/torch/unicode_normalize.h"
#include "core/model/torch/utf8.h"

namespace triescope {

using json = nlohmann::json;

namespace {
std::string type_of(const json& j) { return j.is_object() && j.contains("type") && j["type"].is_string() ? j["type"].get<std::string>() : ""; }

bool bool_field(const json& j, const char* key, bool dflt, const std::string& where) {
  if (!j.contains(key) || j[key].is_null()) return dflt;
  TS_CHECK(j[key].is_boolean(), where << "." << key << " must be true or false, got " << j[key].dump());
  return j[key].get<bool>();
}

// A field that must be absent or null: what it would do is not implemented.
void require_null(const json& j, const char* key, const std::string& where, const char* why) {
  TS_CHECK(!j.contains(key) || j[key].is_null() || (j[key].is_string() && j[key].get<std::string>().empty()),
           where << "." << key << " = " << j[key].dump() << " is not supported: " << why);
}

// Flattens nested Sequence pre-tokenizers (applying a sequence in order is
// the same as applying its members in order).
void flatten_pre(const json& p, const std::string& where, std::vector<std::pair<json, std::string>>& out) {
  TS_CHECK(p.is_object(), where << " must be an object, got " << p.dump());
  if (type_of(p) == "Sequence") {
    TS_CHECK(p.contains("pretokenizers") && p["pretokenizers"].is_array(), where << ".pretokenizers must be an array");
    for (size_t i = 0; i < p["pretokenizers"].size(); ++i)
      flatten_pre(p["pretokenizers"][i], where + ".pretokenizers[" + std::to_string(i) + "]", out);
  } else {
    out.emplace_back(p, where);
  }
}

// Cuts text at code points of class \p{N} (the Digits pre-tokenizer, whose
// char::is_numeric is general category N*): each alone, or runs of them.
void split_digits(const std::string& text, bool individual, std::vector<std::string>& out) {
  std::vector<uint32_t> cps;
  std::vector<size_t> at;
  utf8_decode(text, cps, at, "tokenizer: Digits pre-tokenizer");
  size_t start = 0;
  for (size_t i = 0; i < cps.size();) {
    if (unicode_class(cps[i]) != UnicodeClass::number) {
      ++i;
      continue;
    }
    size_t e = i + 1;
    if (!individual)
      while (e < cps.size() && unicode_class(cps[e]) == UnicodeClass::number) ++e;
    if (start < i) out.push_back(text.substr(at[start], at[i] - at[start]));
    out.push_back(text.substr(at[i], at[e] - at[i]));
    start = i = e;
  }
  if (start < cps.size()) out.push_back(text.substr(at[start]));
}

bool is_space_at(const std::string& s, size_t i, size_t* len) {
  uint32_t cp = 0;
  *len = utf8_next(s, i, &cp);
  return *len > 0 && unicode_class(cp) == UnicodeClass::space;
}
}  // namespace

std::vector<std::string> BpeTokenizer::gpt2_split(const std::string& text) { return split_regex_apply(SplitRegex::gpt2, text); }

BpeTokenizer BpeTokenizer::load(const std::string& path) { return parse(json_load_file(path), path); }

BpeTokenizer BpeTokenizer::parse(const json& j, const std::string& origin) {
  return reader_boundary(origin, [&] { return parse_checked(j, origin); });
}

BpeTokenizer BpeTokenizer::parse_checked(const json& j, const std::string& origin) {
  TS_CHECK(j.is_object() && j.contains("model") && j["model"].is_object(), origin << ": model must be an object");
  const json& m = j["model"];
  BpeTokenizer t;
  t.read_model_options(m, origin + ": model");  // first: the model kind is the most telling refusal
  for (const char* key : {"truncation", "padding"})
    TS_CHECK(!j.contains(key) || j[key].is_null(), origin << ": " << key << " is set: not supported (it changes what encode returns)");
  t.read_normalizer(j, origin);
  t.init_byte_map();
  t.read_pre_tokenizer(j, origin);
  // Decoder: ByteLevel only (tokenizers without one joins token strings with spaces).
  const json dec = j.contains("decoder") ? j["decoder"] : json();
  TS_CHECK(type_of(dec) == "ByteLevel", origin << ": decoder " << (dec.is_null() ? std::string("null") : dec.dump())
                                               << " is not supported: only the ByteLevel decoder is");
  const int32_t max_id = t.read_vocab(m, origin + ": model");
  t.read_added_tokens(j, origin, max_id);
  t.read_merges(m, origin + ": model");
  t.read_post_processor(j, origin);
  return t;
}

// post_processor: null, ByteLevel (offsets only), TemplateProcessing,
// RobertaProcessing, BertProcessing, or a Sequence of ByteLevel and one of the
// others. Only the single-sequence template is read: encode takes one text.
void BpeTokenizer::read_post_processor(const json& j, const std::string& origin) {
  if (!j.contains("post_processor") || j["post_processor"].is_null()) return;
  const json& top = j["post_processor"];
  std::vector<std::pair<const json*, std::string>> list;  // each processor and its field path
  if (type_of(top) == "Sequence") {
    TS_CHECK(top.contains("processors") && top["processors"].is_array(),
             origin << ": post_processor.processors must be an array, got " << json_brief(top.contains("processors") ? top["processors"] : json()));
    for (size_t i = 0; i < top["processors"].size(); ++i)
      list.emplace_back(&top["processors"][i], "post_processor.processors[" + std::to_string(i) + "]");
  } else {
    list.emplace_back(&top, "post_processor");
  }
  auto token_id_in_vocab = [&](const json& v, const std::string& where) {
    const auto id = json_int_in(v, 0, vocab_size() - 1);
    TS_CHECK(id && has_token_[static_cast<size_t>(*id)],
             origin << ": " << where << " = " << json_brief(v) << " is no token id of this vocabulary (0.." << vocab_size() - 1 << ")");
    return static_cast<int32_t>(*id);
  };
  // The template: `ids` with the sequence at `at`. One processor of a
  // Sequence may add tokens (tokenizers 0.20 applies only the first of two
  // templates: refused rather than guessed).
  std::vector<int32_t> ids;
  size_t at = 0;
  std::string adder;
  for (const auto& [pp, where] : list) {
    const json& p = *pp;
    const std::string type = type_of(p);
    std::vector<int32_t> before, after;
    if (type == "ByteLevel") continue;
    TS_CHECK(adder.empty(), origin << ": " << where << " adds tokens after " << adder
                                   << " did: one processor of a Sequence that adds tokens is supported");
    adder = where;
    if (type == "RobertaProcessing" || type == "BertProcessing") {
      for (const char* key : {"cls", "sep"}) {
        TS_CHECK(p.contains(key) && p[key].is_array() && p[key].size() == 2,
                 origin << ": " << where << "." << key << " must be [token, id], got " << json_brief(p.contains(key) ? p[key] : json()));
        (std::string(key) == "cls" ? before : after).push_back(token_id_in_vocab(p[key][1], where + "." + key + "[1]"));
      }
    } else if (type == "TemplateProcessing") {
      TS_CHECK(p.contains("single") && p["single"].is_array(), origin << ": " << where << ".single must be an array");
      const json specials = p.contains("special_tokens") ? p["special_tokens"] : json::object();
      TS_CHECK(specials.is_object(), origin << ": " << where << ".special_tokens must be an object, got " << json_brief(specials));
      bool seen_sequence = false;
      for (size_t i = 0; i < p["single"].size(); ++i) {
        const json& item = p["single"][i];
        const std::string wi = where + ".single[" + std::to_string(i) + "]";
        if (item.is_object() && item.contains("Sequence")) {
          const json& seq = item["Sequence"];
          TS_CHECK(seq.is_object() && seq.contains("id") && seq["id"] == "A" && !seen_sequence,
                   origin << ": " << wi << ": the single template holds sequence A once, got " << json_brief(seq));
          seen_sequence = true;
        } else if (item.is_object() && item.contains("SpecialToken")) {
          const json& sp = item["SpecialToken"];
          TS_CHECK(sp.is_object() && sp.contains("id") && sp["id"].is_string(),
                   origin << ": " << wi << ".SpecialToken.id must be a string, got " << json_brief(sp));
          const std::string name = sp["id"].get<std::string>();
          TS_CHECK(specials.contains(name) && specials[name].is_object() && specials[name].contains("ids") && specials[name]["ids"].is_array(),
                   origin << ": " << wi << ": special token \"" << name << "\" has no ids in " << where << ".special_tokens");
          const json& sids = specials[name]["ids"];
          for (size_t k = 0; k < sids.size(); ++k)
            (seen_sequence ? after : before)
                .push_back(token_id_in_vocab(sids[k], where + ".special_tokens[\"" + name + "\"].ids[" + std::to_string(k) + "]"));
        } else {
          TS_FAIL(origin << ": " << wi << " must be {\"Sequence\": ...} or {\"SpecialToken\": ...}, got " << json_brief(item));
        }
      }
      TS_CHECK(seen_sequence, origin << ": " << where << ".single has no sequence A");
    } else {
      TS_FAIL(origin << ": " << where << (type.empty() ? " " + json_brief(p) : ".type \"" + type + "\"")
                     << " is not supported (ByteLevel, TemplateProcessing, RobertaProcessing, BertProcessing and a Sequence of them are)");
    }
    ids = before;
    at = before.size();
    ids.insert(ids.end(), after.begin(), after.end());
  }
  post_ids_ = std::move(ids);
  post_sequence_at_ = at;
}

std::string BpeTokenizer::post_processor() const {
  if (post_ids_.empty()) return "none";
  std::ostringstream os;
  os << "template(";
  for (size_t i = 0; i <= post_ids_.size(); ++i) {
    if (i == post_sequence_at_) os << (i ? " " : "") << "$A";
    if (i < post_ids_.size()) os << (i ? " " : "") << post_ids_[i];
  }
  os << ")";
  return os.str();
}

// model.type and the BPE options; what is not implemented is refused.
void BpeTokenizer::read_model_options(const json& m, const std::string& where_m) {
  if (m.contains("type"))
    TS_CHECK(m["type"] == "BPE", where_m << ".type " << m["type"].dump()
                                         << " is not supported: only byte-level BPE is (WordPiece, Unigram and WordLevel are not)");
  TS_CHECK(!bool_field(m, "byte_fallback", false, where_m),
           where_m << ".byte_fallback is true: SentencePiece-style BPE (<0xNN> byte tokens) is not supported, only byte-level BPE");
  require_null(m, "continuing_subword_prefix", where_m, "only byte-level BPE without subword affixes is");
  require_null(m, "end_of_word_suffix", where_m, "only byte-level BPE without subword affixes is");
  if (m.contains("dropout") && !m["dropout"].is_null())
    TS_CHECK(m["dropout"].is_number() && m["dropout"].get<double>() == 0.0,
             where_m << ".dropout = " << m["dropout"].dump() << " is not supported: BPE dropout is random, decoding here is deterministic");
  fuse_unk_ = bool_field(m, "fuse_unk", false, where_m);
  ignore_merges_ = bool_field(m, "ignore_merges", false, where_m);
}

// normalizer: null, NFC/NFD/NFKC/NFKD or a Sequence of them.
void BpeTokenizer::read_normalizer(const json& j, const std::string& origin) {
  if (j.contains("normalizer") && !j["normalizer"].is_null()) {
    const json& n = j["normalizer"];
    std::vector<json> list;
    if (type_of(n) == "Sequence") {
      TS_CHECK(n.contains("normalizers") && n["normalizers"].is_array(), origin << ": normalizer.normalizers must be an array");
      list.assign(n["normalizers"].begin(), n["normalizers"].end());
    } else {
      list.push_back(n);
    }
    for (const json& x : list) {
      const std::string type = type_of(x);
      const NormalForm forms[] = {NormalForm::nfc, NormalForm::nfd, NormalForm::nfkc, NormalForm::nfkd};
      const auto* f = std::find_if(std::begin(forms), std::end(forms), [&](NormalForm nf) { return type == normal_form_name(nf); });
      TS_CHECK(f != std::end(forms), origin << ": normalizer " << (type.empty() ? x.dump() : "type \"" + type + "\"")
                                            << " is not supported (NFC, NFD, NFKC, NFKD and a Sequence of them are)");
      normalizers_.push_back(*f);
    }
  }
}

// GPT-2's byte-to-unicode map: printable Latin-1 bytes map to themselves, the
// rest to U+0100 onwards in byte order, so every byte is one visible char.
void BpeTokenizer::init_byte_map() {
  uint32_t extra = 0;
  for (int b = 0; b < 256; ++b) {
    const bool keep = (b >= '!' && b <= '~') || (b >= 0xa1 && b <= 0xac) || (b >= 0xae && b <= 0xff);
    const uint32_t cp = keep ? static_cast<uint32_t>(b) : 256 + extra++;
    utf8_append(byte_char_[b], cp);
    char_byte_[cp] = static_cast<uint8_t>(b);
  }
}

// The pre_tokenizer as steps, nested Sequences flattened; one must be ByteLevel.
void BpeTokenizer::read_pre_tokenizer(const json& j, const std::string& origin) {
  TS_CHECK(j.contains("pre_tokenizer") && !j["pre_tokenizer"].is_null(),
           origin << ": pre_tokenizer is null: byte-level BPE needs a ByteLevel pre_tokenizer");
  std::vector<std::pair<json, std::string>> pres;
  flatten_pre(j["pre_tokenizer"], origin + ": pre_tokenizer", pres);
  bool byte_level = false;
  for (const auto& [p, where] : pres) {
    const std::string type = type_of(p);
    PreStep s{PreStep::byte_level};
    if (type == "ByteLevel") {
      s.add_prefix_space = bool_field(p, "add_prefix_space", true, where);
      s.use_regex = bool_field(p, "use_regex", true, where);
      byte_level = true;
      pretokenizer_ += std::string(pretokenizer_.empty() ? "" : "+") + "ByteLevel" + (s.use_regex ? "(gpt2)" : "");
    } else if (type == "Split") {
      s.kind = PreStep::split;
      TS_CHECK(p.contains("pattern") && p["pattern"].is_object() && p["pattern"].contains("Regex") && p["pattern"]["Regex"].is_string(),
               where << ".pattern must be {\"Regex\": ...}; got " << (p.contains("pattern") ? p["pattern"].dump() : "nothing")
                     << " (String patterns are not supported)");
      const std::string pattern = p["pattern"]["Regex"].get<std::string>();
      const auto r = split_regex_find(pattern);
      TS_CHECK(r.has_value(), where << ".pattern.Regex is not one of the regexes implemented here (GPT-2, Llama-3, Qwen2): " << pattern);
      s.regex = *r;
      TS_CHECK(p.contains("behavior") && p["behavior"] == "Isolated",
               where << ".behavior " << (p.contains("behavior") ? p["behavior"].dump() : "(missing)") << " is not supported (Isolated only)");
      TS_CHECK(!bool_field(p, "invert", false, where), where << ".invert is true: not supported");
      pretokenizer_ += std::string(pretokenizer_.empty() ? "" : "+") + "Split(" + split_regex_name(*r) + ")";
    } else if (type == "Digits") {
      s.kind = PreStep::digits;
      s.individual = bool_field(p, "individual_digits", false, where);
      pretokenizer_ += std::string(pretokenizer_.empty() ? "" : "+") + (s.individual ? "Digits(individual)" : "Digits");
    } else {
      TS_FAIL(where << ".type \"" << type << "\" is not supported (ByteLevel, Split, Digits, Sequence)");
    }
    steps_.push_back(s);
  }
  TS_CHECK(byte_level, origin << ": pre_tokenizer has no ByteLevel step: only byte-level BPE is supported");

  // Decoder: ByteLevel only (tokenizers without one joins token strings with spaces).
  const json dec = j.contains("decoder") ? j["decoder"] : json();
  TS_CHECK(type_of(dec) == "ByteLevel", origin << ": decoder " << (dec.is_null() ? std::string("null") : dec.dump())
                                               << " is not supported: only the ByteLevel decoder is");
}

// model.vocab and model.unk_token; returns the largest id.
int32_t BpeTokenizer::read_vocab(const json& m, const std::string& where_m) {
  TS_CHECK(m.contains("vocab") && m["vocab"].is_object(), where_m << ".vocab must be an object {token: id}");
  int32_t max_id = -1;
  std::unordered_map<int32_t, std::string> by_id;
  for (auto& [tok, id] : m["vocab"].items()) {
    TS_CHECK(id.is_number_integer() && id.get<int64_t>() >= 0 && id.get<int64_t>() < (1 << 24),
             where_m << ".vocab[\"" << tok << "\"] must be an id in [0, 2^24), got " << id.dump());
    const auto v = id.get<int32_t>();
    const auto [it, fresh] = by_id.emplace(v, tok);
    TS_CHECK(fresh, where_m << ".vocab gives id " << v << " to both \"" << it->second << "\" and \"" << tok << "\"");
    vocab_[tok] = v;
    max_id = std::max(max_id, v);
  }
  if (m.contains("unk_token") && !m["unk_token"].is_null()) {
    TS_CHECK(m["unk_token"].is_string(), where_m << ".unk_token must be a string or null");
    const auto it = vocab_.find(m["unk_token"].get<std::string>());
    TS_CHECK(it != vocab_.end(), where_m << ".unk_token " << m["unk_token"].dump() << " is not in model.vocab");
    unk_id_ = it->second;
  }
  return max_id;
}

// added_tokens, with the ids tokenizers gives them (a content already in the
// vocabulary keeps its id, others get the next one after the vocabulary), then
// the id -> token table over the vocabulary and them.
void BpeTokenizer::read_added_tokens(const json& j, const std::string& origin, int32_t max_id) {
  struct Parsed {
    Added a;
    bool normalized, special;
  };
  std::vector<Parsed> added;
  if (j.contains("added_tokens") && !j["added_tokens"].is_null()) {
    TS_CHECK(j["added_tokens"].is_array(), origin << ": added_tokens must be an array");
    std::unordered_map<std::string, int32_t> added_ids;
    int32_t added_max = -1;
    const auto model_size = static_cast<int32_t>(vocab_.size());
    for (size_t i = 0; i < j["added_tokens"].size(); ++i) {
      const json& a = j["added_tokens"][i];
      const std::string where = origin + ": added_tokens[" + std::to_string(i) + "]";
      TS_CHECK(a.is_object() && a.contains("id") && a["id"].is_number_integer() && a.contains("content") && a["content"].is_string() &&
                   !a["content"].get<std::string>().empty(),
               where << " needs an integer id and a non-empty content");
      const auto id = json_int_in(a["id"], 0, (1 << 24) - 1);  // never truncated: 2^32 + 97 is not 97
      TS_CHECK(id, where << ".id must be in [0, 2^24), got " << json_brief(a["id"]));
      Parsed p{{a["content"].get<std::string>(), static_cast<int32_t>(*id), false, false}, true, false};
      TS_CHECK(utf8_valid(p.a.content), where << ".content is not valid UTF-8");
      TS_CHECK(!added_ids.count(p.a.content), where << ".content \"" << p.a.content << "\" is listed twice");
      p.special = bool_field(a, "special", false, where);
      p.normalized = bool_field(a, "normalized", !p.special, where);
      p.a.lstrip = bool_field(a, "lstrip", false, where);
      p.a.rstrip = bool_field(a, "rstrip", false, where);
      TS_CHECK(!bool_field(a, "single_word", false, where), where << ".single_word is true: not supported");
      int32_t expect;
      if (auto it = vocab_.find(p.a.content); it != vocab_.end()) {
        expect = it->second;
      } else {
        expect = added_max < 0 ? model_size : (added_max >= model_size || model_size == 0 ? added_max + 1 : model_size);
      }
      TS_CHECK(p.a.id == expect, where << ".id is " << p.a.id << " but tokenizers gives \"" << p.a.content << "\" the id " << expect);
      added_ids[p.a.content] = expect;
      added_max = std::max(added_max, expect);
      max_id = std::max(max_id, expect);
      added.push_back(p);
    }
  }
  id_to_token_.assign(static_cast<size_t>(max_id + 1), "");
  has_token_.assign(static_cast<size_t>(max_id + 1), 0);
  for (const auto& [tok, id] : vocab_) {
    id_to_token_[static_cast<size_t>(id)] = tok;
    has_token_[static_cast<size_t>(id)] = 1;
  }
  for (const Parsed& p : added) {
    id_to_token_[static_cast<size_t>(p.a.id)] = p.a.content;
    has_token_[static_cast<size_t>(p.a.id)] = 1;
    if (p.special) special_.insert(p.a.content);
    if (p.normalized) {  // matched on normalized text, so with its content normalized too
      Added a = p.a;
      a.content = normalize(a.content);
      TS_CHECK(!a.content.empty(), origin << ": added token \"" << p.a.content << "\" normalizes to nothing");
      added_normalized_.push_back(a);
    } else {
      added_raw_.push_back(p.a);
    }
  }
}

// model.merges: "a b" (lines starting "#version" skipped) or ["a", "b"]; a, b
// and a + b must be in the vocabulary; a pair listed twice keeps its last rank.
void BpeTokenizer::read_merges(const json& m, const std::string& where_m) {
  if (m.contains("merges") && !m["merges"].is_null()) {
    TS_CHECK(m["merges"].is_array(), where_m << ".merges must be an array");
    const json& merges = m["merges"];
    int32_t rank = 0;
    for (size_t i = 0; i < merges.size(); ++i) {
      std::string a, b;
      if (merges[i].is_string()) {
        const std::string s = merges[i].get<std::string>();
        if (s.rfind("#version", 0) == 0) continue;
        const size_t sp = s.find(' ');
        TS_CHECK(sp != std::string::npos && s.find(' ', sp + 1) == std::string::npos,
                 where_m << ".merges[" << i << "] = \"" << s << "\" must be \"a b\" (one space)");
        a = s.substr(0, sp);
        b = s.substr(sp + 1);
      } else {
        TS_CHECK(merges[i].is_array() && merges[i].size() == 2 && merges[i][0].is_string() && merges[i][1].is_string(),
                 where_m << ".merges[" << i << "] must be \"a b\" or [\"a\", \"b\"]");
        a = merges[i][0].get<std::string>();
        b = merges[i][1].get<std::string>();
      }
      int32_t ids[3];
      const std::string parts[3] = {a, b, a + b};
      for (int k = 0; k < 3; ++k) {
        const auto it = vocab_.find(parts[k]);
        TS_CHECK(it != vocab_.end(), where_m << ".merges[" << i << "]: \"" << parts[k] << "\" is not in model.vocab");
        ids[k] = it->second;
      }
      merges_[(static_cast<uint64_t>(ids[0]) << 32) | static_cast<uint32_t>(ids[1])] = {rank++, ids[2]};
    }
  }
}

std::optional<int32_t> BpeTokenizer::token_id(const std::string& s) const {
  auto it = vocab_.find(s);
  if (it == vocab_.end()) return std::nullopt;
  return it->second;
}

// tokenizers' AddedVocabulary::find_matches: leftmost-longest matches, not
// overlapping; lstrip takes the spaces before the match (not those of an
// earlier match), rstrip those after it.
void BpeTokenizer::split_added(std::vector<Segment>& segs, const std::vector<Added>& set) const {
  if (set.empty()) return;
  bool first_byte[256] = {};  // positions whose byte starts no token are skipped
  for (const Added& a : set) first_byte[static_cast<unsigned char>(a.content[0])] = true;
  std::vector<Segment> out;
  for (Segment& seg : segs) {
    if (seg.id >= 0) {
      out.push_back(std::move(seg));
      continue;
    }
    const std::string& s = seg.text;
    size_t start_offset = 0;
    for (size_t pos = 0; pos < s.size();) {
      const Added* hit = nullptr;
      size_t at = pos;
      for (; at < s.size(); ++at) {
        if (!first_byte[static_cast<unsigned char>(s[at])]) continue;
        for (const Added& a : set)
          if ((!hit || a.content.size() > hit->content.size()) && s.compare(at, a.content.size(), a.content) == 0) hit = &a;
        if (hit) break;
      }
      if (!hit) break;
      size_t start = at, stop = at + hit->content.size();
      pos = stop;  // the search goes on after the match itself, whatever rstrip takes
      if (hit->lstrip) {
        size_t b = start;
        while (b > 0) {
          size_t k = b - 1;
          while (k > 0 && (static_cast<unsigned char>(s[k]) & 0xc0) == 0x80) --k;
          size_t len = 0;
          if (!is_space_at(s, k, &len)) break;
          b = k;
        }
        start = std::max(b, start_offset);
      }
      if (hit->rstrip) {
        size_t len = 0;
        while (stop < s.size() && is_space_at(s, stop, &len)) stop += len;
      }
      if (start_offset < start) out.push_back({s.substr(start_offset, start - start_offset), -1});
      out.push_back({s.substr(start, stop - start), hit->id});
      start_offset = stop;
    }
    if (start_offset < s.size()) out.push_back({s.substr(start_offset), -1});
  }
  segs.swap(out);
}

std::string BpeTokenizer::normalizer() const {
  std::string out;
  for (NormalForm f : normalizers_) out += std::string(out.empty() ? "" : "+") + normal_form_name(f);
  return out.empty() ? "none" : out;
}

std::string BpeTokenizer::normalize(std::string text) const {
  for (NormalForm f : normalizers_) text = unicode_normalize(text, f);
  return text;
}

std::vector<std::string> BpeTokenizer::pre_tokenize(const std::string& text) const {
  std::vector<std::string> pieces{text}, next;
  for (const PreStep& s : steps_) {
    next.clear();
    for (std::string& p : pieces) {
      switch (s.kind) {
        case PreStep::byte_level: {
          if (s.add_prefix_space && p[0] != ' ') p.insert(p.begin(), ' ');
          std::vector<std::string> words = s.use_regex ? split_regex_apply(SplitRegex::gpt2, p) : std::vector<std::string>{p};
          for (const std::string& w : words) {
            std::string mapped;
            for (unsigned char c : w) mapped += byte_char_[c];
            next.push_back(std::move(mapped));
          }
          break;
        }
        case PreStep::split:
          for (std::string& w : split_regex_apply(s.regex, p)) next.push_back(std::move(w));
          break;
        case PreStep::digits:
          split_digits(p, s.individual, next);
          break;
      }
    }
    pieces.swap(next);
  }
  return pieces;
}

// tokenizers' BPE::merge_word + Word::merge_all: code points looked up one by
// one (unknown ones become unk_token, fused if fuse_unk, or are dropped when
// there is none), then the lowest-ranked adjacent pair is merged first, the
// leftmost among equals, until no ranked pair is left.
void BpeTokenizer::bpe(const std::string& piece, std::vector<int32_t>& out) const {
  if (ignore_merges_) {
    if (auto it = vocab_.find(piece); it != vocab_.end()) {
      out.push_back(it->second);
      return;
    }
  }
  struct Symbol {
    int32_t id;
    int64_t prev, next;
    size_t len;
  };
  std::vector<Symbol> sym;
  int32_t unk = -1;  // a pending unk_token (id) and the bytes it covers
  size_t unk_len = 0;
  auto add = [&](int32_t id, size_t len) {
    const auto n = static_cast<int64_t>(sym.size());
    sym.push_back({id, n - 1, n + 1, len});
  };
  for (size_t i = 0; i < piece.size();) {
    uint32_t cp = 0;
    size_t n = utf8_next(piece, i, &cp);
    if (n == 0) n = 1;  // unreachable: pieces come from valid UTF-8 text
    const auto it = vocab_.find(piece.substr(i, n));
    if (it != vocab_.end()) {
      if (unk >= 0) add(unk, unk_len);
      unk = -1;
      add(it->second, n);
    } else if (unk_id_) {
      if (unk >= 0 && fuse_unk_) {
        unk_len += n;
      } else {
        if (unk >= 0) add(unk, unk_len);
        unk = *unk_id_;
        unk_len = n;
      }
    }
    i += n;
  }
  if (unk >= 0) add(unk, unk_len);
  if (!sym.empty()) sym.back().next = -1;

  struct Cand {
    int32_t rank;
    size_t pos;
    int32_t new_id;
    bool operator>(const Cand& o) const { return rank != o.rank ? rank > o.rank : pos > o.pos; }
  };
  std::priority_queue<Cand, std::vector<Cand>, std::greater<Cand>> queue;
  auto merge_of = [&](int32_t a, int32_t b) -> const Merge* {
    const auto it = merges_.find((static_cast<uint64_t>(a) << 32) | static_cast<uint32_t>(b));
    return it == merges_.end() ? nullptr : &it->second;
  };
  for (size_t i = 0; i + 1 < sym.size(); ++i)
    if (const Merge* mg = merge_of(sym[i].id, sym[i + 1].id)) queue.push({mg->rank, i, mg->new_id});
  while (!queue.empty()) {
    const Cand top = queue.top();
    queue.pop();
    Symbol& cur = sym[top.pos];
    if (cur.len == 0 || cur.next < 0) continue;
    const auto next_pos = static_cast<size_t>(cur.next);
    const Symbol right = sym[next_pos];
    const Merge* now = merge_of(cur.id, right.id);
    if (!now || now->new_id != top.new_id) continue;  // an entry made stale by an earlier merge
    cur.id = top.new_id;
    cur.len += right.len;
    cur.next = right.next;
    sym[next_pos].len = 0;
    if (right.next >= 0 && static_cast<size_t>(right.next) < sym.size()) sym[static_cast<size_t>(right.next)].prev = static_cast<int64_t>(top.pos);
    if (cur.prev >= 0)
      if (const Merge* mg = merge_of(sym[static_cast<size_t>(cur.prev)].id, cur.id))
        queue.push({mg->rank, static_cast<size_t>(cur.prev), mg->new_id});
    if (cur.next >= 0)
      if (const Merge* mg = merge_of(cur.id, sym[static_cast<size_t>(cur.next)].id)) queue.push({mg->rank, top.pos, mg->new_id});
  }
  for (const Symbol& s : sym)
    if (s.len) out.push_back(s.id);
}

std::vector<int32_t> BpeTokenizer::encode(const std::string& text, bool add_special_tokens) const {
  if (!utf8_valid(text)) {  // named error with the byte offset
    std::vector<uint32_t> cps;
    std::vector<size_t> at;
    utf8_decode(text, cps, at, "tokenizer: encode");
  }
  std::vector<Segment> segs;
  if (!text.empty()) segs.push_back({text, -1});
  split_added(segs, added_raw_);
  if (!normalizers_.empty())
    for (Segment& seg : segs)
      if (seg.id < 0) seg.text = normalize(seg.text);
  split_added(segs, added_normalized_);
  std::vector<int32_t> out;
  for (const Segment& seg : segs) {
    if (seg.id >= 0) {
      out.push_back(seg.id);
      continue;
    }
    for (const std::string& piece : pre_tokenize(seg.text)) bpe(piece, out);
  }
  if (add_special_tokens && !post_ids_.empty()) {
    const auto split = post_ids_.begin() + static_cast<std::ptrdiff_t>(post_sequence_at_);
    out.insert(out.begin(), post_ids_.begin(), split);
    out.insert(out.end(), split, post_ids_.end());
  }
  return out;
}

const std::string& BpeTokenizer::token_string(int32_t id, size_t k) const {
  TS_CHECK(id >= 0 && id < vocab_size() && has_token_[static_cast<size_t>(id)],
           "tokenizer: decode: ids[" << k << "] = " << id << " is no token (outside [0, " << vocab_size() << ") or unused)");
  return id_to_token_[static_cast<size_t>(id)];
}

std::string BpeTokenizer::decode_bytes(const std::vector<int32_t>& ids) const {
  std::string out;
  for (size_t k = 0; k < ids.size(); ++k) {
    const std::string& s = token_string(ids[k], k);
    // The ByteLevel decoder: a token whose every char is a byte-level char
    // gives those bytes; any other token (e.g. an added " <x>") its own text.
    std::string bytes;
    bool all = true;
    for (size_t i = 0; i < s.size() && all;) {
      uint32_t cp = 0;
      const size_t n = utf8_next(s, i, &cp);
      const auto it = n ? char_byte_.find(cp) : char_byte_.end();
      if (it == char_byte_.end()) all = false;
      else bytes += static_cast<char>(it->second);
      i += n ? n : 1;
    }
    out += all ? bytes : s;
  }
  return out;
}

std::string BpeTokenizer::decode(const std::vector<int32_t>& ids, bool skip_special_tokens) const {
  if (!skip_special_tokens) return utf8_lossy(decode_bytes(ids));
  std::vector<int32_t> kept;
  for (size_t k = 0; k < ids.size(); ++k)
    if (!special_.count(token_string(ids[k], k))) kept.push_back(ids[k]);
  return utf8_lossy(decode_bytes(kept));
}

std::string BpeTokenizer::token_display(int32_t id) const {
  if (id < 0 || id >= vocab_size() || !has_token_[static_cast<size_t>(id)]) return std::to_string(id);
  const std::string d = decode_bytes({id});
  return utf8_valid(d) ? d : id_to_token_[static_cast<size_t>(id)];
}

}  // namespace triescope
