// Byte-level BPE from a Hugging Face tokenizer.json (GPT-2 / SmolLM / Qwen /
// Llama-3 style): text -> UTF-8 bytes -> GPT-2 byte-to-unicode characters ->
// merges applied by rank; added (special) tokens are matched first, verbatim.
// SentencePiece-style BPE (Metaspace, byte_fallback: Llama-2, TinyLlama) is
// rejected with a named error.
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include <nlohmann/json.hpp>

namespace triescope {

class BpeTokenizer {
 public:
  static BpeTokenizer load(const std::string& path);
  static BpeTokenizer parse(const nlohmann::json& j, const std::string& origin);

  std::vector<int32_t> encode(const std::string& text) const;
  // Inverse of encode for any ids it produced; special tokens decode to their text.
  std::string decode(const std::vector<int32_t>& ids) const;
  // One token for display: its decoded text when that is valid UTF-8, else
  // its byte-level form ("Ġ", "âĢ"), which always is.
  std::string token_display(int32_t id) const;
  int32_t vocab_size() const { return static_cast<int32_t>(id_to_token_.size()); }
  std::optional<int32_t> token_id(const std::string& byte_level_form) const;
  // The pre-tokenizer this file asked for, as understood here (for describe()).
  const std::string& pretokenizer() const { return pretokenizer_; }

  // Splits text the way the GPT-2 pattern
  //   's|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+
  // does (exposed for tests). Letters/numbers are exact for ASCII; other code
  // points are classed by a small table (docs/transformer.md).
  static std::vector<std::string> gpt2_split(const std::string& text);

 private:
  static BpeTokenizer parse_checked(const nlohmann::json& j, const std::string& origin);  // parse without the reader boundary
  void encode_plain(const std::string& text, std::vector<int32_t>& out) const;
  std::unordered_map<std::string, int32_t> vocab_;    // byte-level form -> id
  std::vector<std::string> id_to_token_;              // [vocab_size] byte-level form or added content
  std::vector<uint8_t> is_added_;                     // [vocab_size]
  std::unordered_map<std::string, int32_t> merge_rank_;  // "a b" -> rank
  struct Added {
    std::string content;
    int32_t id;
  };
  std::vector<Added> added_;  // longest content first
  bool individual_digits_ = false;
  bool ignore_merges_ = false;  // Llama-3 style: a pre-token found whole in the vocab is one token
  bool add_prefix_space_ = false;
  std::string pretokenizer_;
  std::string byte_char_[256];                            // GPT-2 byte -> unicode char (UTF-8)
  std::unordered_map<std::string, uint8_t> char_byte_;    // its inverse
};

}  // namespace triescope
