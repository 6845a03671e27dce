// Byte-level BPE from a Hugging Face tokenizer.json (GPT-2 / SmolLM / Qwen2 /
// Llama-3 style), giving the ids and text the `tokenizers` library (0.20)
// gives: added tokens are split off (those marked normalized after the
// normalizer, NFC/NFD/NFKC/NFKD, ran; leftmost-longest, with lstrip/rstrip),
// the pre-tokenizer sequence (ByteLevel, Split with a known regex, Digits)
// cuts the rest, and BPE merges each piece by rank. What this does not
// reproduce (other normalizers, models and pre-tokenizers, other decoders,
// byte_fallback, single_word) is refused with a named error naming the file
// and field. docs/transformer.md lists exactly what is read.
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/model/torch/pretokenizer_regex.h"
#include "core/model/torch/unicode_normalize.h"

namespace triescope {

class BpeTokenizer {
 public:
  static BpeTokenizer load(const std::string& path);
  static BpeTokenizer parse(const nlohmann::json& j, const std::string& origin);

  // tokenizers' encode(text, add_special_tokens).ids. With add_special_tokens
  // the post_processor's single-sequence template wraps the ids (e.g. a
  // TemplateProcessing that puts a BOS token first; what `tokenizer(text)`
  // does in transformers by default). Throws Error on text that is not valid
  // UTF-8 (the library only takes str).
  std::vector<int32_t> encode(const std::string& text, bool add_special_tokens = false) const;
  // The post_processor as understood here, for describe(): e.g.
  // "template(128000 $A)" or "none".
  std::string post_processor() const;
  // tokenizers' decode(ids, skip_special_tokens): ByteLevel decoding, then
  // invalid UTF-8 (a multi-byte character cut between ids) becomes U+FFFD.
  // Unlike the library, an id that is no token is an error, not skipped.
  std::string decode(const std::vector<int32_t>& ids, bool skip_special_tokens = false) const;
  // The raw bytes those ids stand for (no U+FFFD): concatenating the bytes of
  // consecutive pieces of a generation gives the bytes of the whole.
  std::string decode_bytes(const std::vector<int32_t>& ids) const;
  // One token for display: its decoded bytes when they are valid UTF-8, else
  // its byte-level form ("Ġ", "âĢ"), which always is.
  std::string token_display(int32_t id) const;
  int32_t vocab_size() const { return static_cast<int32_t>(id_to_token_.size()); }
  // The id of a model vocabulary entry, by its byte-level form.
  std::optional<int32_t> token_id(const std::string& byte_level_form) const;
  // The pre-tokenizer this file asked for, as understood here (for describe()):
  // e.g. "Split(llama3)+ByteLevel".
  const std::string& pretokenizer() const { return pretokenizer_; }
  // The normalizers, in order ("NFC", "NFKC+NFC"), or "none".
  std::string normalizer() const;

  // The GPT-2 pattern's split (split_regex_apply(SplitRegex::gpt2, text)).
  static std::vector<std::string> gpt2_split(const std::string& text);

 private:
  static BpeTokenizer parse_checked(const nlohmann::json& j, const std::string& origin);  // parse without the reader boundary
  struct PreStep {
    enum Kind { byte_level, split, digits } kind;
    bool add_prefix_space = false;  // byte_level
    bool use_regex = true;          // byte_level: cut with the GPT-2 pattern first
    SplitRegex regex = SplitRegex::gpt2;  // split
    bool individual = false;        // digits: each digit alone, else runs of digits
  };
  struct Added {
    std::string content;
    int32_t id;
    bool lstrip, rstrip;
  };
  struct Segment {  // a piece of the input: plain text, or an added token's id
    std::string text;
    int32_t id = -1;
  };
  struct Merge {
    int32_t rank, new_id;
  };

  void read_model_options(const nlohmann::json& m, const std::string& where_m);
  void read_normalizer(const nlohmann::json& j, const std::string& origin);
  void init_byte_map();
  void read_pre_tokenizer(const nlohmann::json& j, const std::string& origin);
  int32_t read_vocab(const nlohmann::json& m, const std::string& where_m);
  void read_added_tokens(const nlohmann::json& j, const std::string& origin, int32_t max_id);
  void read_merges(const nlohmann::json& m, const std::string& where_m);
  void read_post_processor(const nlohmann::json& j, const std::string& origin);
  void split_added(std::vector<Segment>& segs, const std::vector<Added>& set) const;
  std::string normalize(std::string text) const;
  std::vector<std::string> pre_tokenize(const std::string& text) const;
  void bpe(const std::string& piece, std::vector<int32_t>& out) const;
  const std::string& token_string(int32_t id, size_t k) const;

  std::unordered_map<std::string, int32_t> vocab_;  // model.vocab: byte-level form -> id
  std::vector<std::string> id_to_token_;            // [vocab_size] model token or added content ("" for no token)
  std::vector<uint8_t> has_token_;                  // [vocab_size] 1 where id_to_token_ is a token
  std::unordered_set<std::string> special_;         // contents of the special added tokens
  std::unordered_map<uint64_t, Merge> merges_;      // (left id << 32 | right id) -> rank, merged id
  std::vector<Added> added_raw_, added_normalized_;  // the two passes (normalized: false / true)
  std::vector<NormalForm> normalizers_;  // applied in order
  std::vector<PreStep> steps_;
  std::optional<int32_t> unk_id_;
  bool fuse_unk_ = false;
  bool ignore_merges_ = false;  // a pre-token found whole in the vocab is one token (Llama-3)
  std::string pretokenizer_;
  // The single-sequence template: ids around the sequence, which stands at
  // position `post_sequence_at_` (post_processor null or ByteLevel: none).
  std::vector<int32_t> post_ids_;
  size_t post_sequence_at_ = 0;
  std::string byte_char_[256];                       // GPT-2 byte -> unicode char (UTF-8)
  std::unordered_map<uint32_t, uint8_t> char_byte_;  // its inverse, by code point
};

}  // namespace triescope
