#include "core/model/torch/unicode_normalize.h"

#include <algorithm>
#include <cstdint>
#include <iterator>
#include <vector>

#include "core/model/torch/utf8.h"

namespace triescope {

namespace {
struct CombiningRange {
  char32_t first, last;
  uint8_t ccc;
};
struct Decomposition {
  char32_t cp;
  uint16_t canon_at;
  uint8_t canon_len;
  uint16_t compat_at;
  uint8_t compat_len;
};
struct Composition {
  char32_t first, second, composite;
};
#include "core/model/torch/unicode_normalization_table.inc"

// Hangul syllables are composed and decomposed by arithmetic (Unicode ch. 3.12).
constexpr char32_t kSBase = 0xAC00, kLBase = 0x1100, kVBase = 0x1161, kTBase = 0x11A7;
constexpr char32_t kLCount = 19, kVCount = 21, kTCount = 28, kNCount = kVCount * kTCount, kSCount = kLCount * kNCount;

uint8_t combining_class(char32_t cp) {
  const auto* it = std::upper_bound(std::begin(kCombiningClass), std::end(kCombiningClass), cp,
                                    [](char32_t c, const CombiningRange& r) { return c < r.first; });
  if (it == std::begin(kCombiningClass)) return 0;
  --it;
  return cp <= it->last ? it->ccc : 0;
}

void decompose(char32_t cp, bool compat, std::vector<char32_t>& out) {
  if (cp >= kSBase && cp < kSBase + kSCount) {
    const char32_t s = cp - kSBase;
    out.push_back(kLBase + s / kNCount);
    out.push_back(kVBase + (s % kNCount) / kTCount);
    if (s % kTCount) out.push_back(kTBase + s % kTCount);
    return;
  }
  const auto* it = std::lower_bound(std::begin(kDecomposition), std::end(kDecomposition), cp,
                                    [](const Decomposition& d, char32_t c) { return d.cp < c; });
  if (it == std::end(kDecomposition) || it->cp != cp) {
    out.push_back(cp);
  } else if (compat && it->compat_len) {
    out.insert(out.end(), kDecompositionData + it->compat_at, kDecompositionData + it->compat_at + it->compat_len);
  } else if (it->canon_len) {
    out.insert(out.end(), kDecompositionData + it->canon_at, kDecompositionData + it->canon_at + it->canon_len);
  } else {
    out.push_back(cp);
  }
}

// The primary composite of (a, b), or 0.
char32_t compose(char32_t a, char32_t b) {
  if (a >= kLBase && a < kLBase + kLCount && b >= kVBase && b < kVBase + kVCount)
    return kSBase + ((a - kLBase) * kVCount + (b - kVBase)) * kTCount;
  if (a >= kSBase && a < kSBase + kSCount && (a - kSBase) % kTCount == 0 && b > kTBase && b < kTBase + kTCount)
    return a + (b - kTBase);
  const auto* it = std::lower_bound(std::begin(kComposition), std::end(kComposition), std::make_pair(a, b),
                                    [](const Composition& c, const std::pair<char32_t, char32_t>& k) {
                                      return c.first != k.first ? c.first < k.first : c.second < k.second;
                                    });
  return it != std::end(kComposition) && it->first == a && it->second == b ? it->composite : 0;
}
}  // namespace

const char* normal_form_name(NormalForm f) {
  switch (f) {
    case NormalForm::nfc: return "NFC";
    case NormalForm::nfd: return "NFD";
    case NormalForm::nfkc: return "NFKC";
    case NormalForm::nfkd: return "NFKD";
  }
  return "?";
}

std::string unicode_normalize(std::string_view utf8, NormalForm f) {
  std::vector<uint32_t> cps;
  std::vector<size_t> at;
  utf8_decode(utf8, cps, at, "normalizer");
  const bool compat = f == NormalForm::nfkc || f == NormalForm::nfkd;
  std::vector<char32_t> d;
  d.reserve(cps.size());
  for (uint32_t cp : cps) decompose(cp, compat, d);
  // Canonical ordering: a stable sort of each run of non-starters by class.
  for (size_t i = 0; i < d.size();) {
    if (combining_class(d[i]) == 0) {
      ++i;
      continue;
    }
    size_t e = i;
    while (e < d.size() && combining_class(d[e]) != 0) ++e;
    std::stable_sort(d.begin() + static_cast<std::ptrdiff_t>(i), d.begin() + static_cast<std::ptrdiff_t>(e),
                     [](char32_t a, char32_t b) { return combining_class(a) < combining_class(b); });
    i = e;
  }
  if ((f == NormalForm::nfc || f == NormalForm::nfkc) && !d.empty()) {
    // Canonical composition (UAX #15): a character joins the last starter when
    // nothing between them is a starter or has a class >= its own.
    std::vector<char32_t> c{d[0]};
    size_t starter = 0;
    int last_class = combining_class(d[0]) ? 256 : 0;  // 256: no starter yet
    for (size_t i = 1; i < d.size(); ++i) {
      const int cc = combining_class(d[i]);
      if (last_class < cc || last_class == 0) {
        if (const char32_t comp = compose(c[starter], d[i])) {
          c[starter] = comp;
          continue;
        }
      }
      if (cc == 0) starter = c.size();
      last_class = cc;
      c.push_back(d[i]);
    }
    d.swap(c);
  }
  std::string out;
  out.reserve(utf8.size());
  for (char32_t ch : d) utf8_append(out, ch);
  return out;
}

}  // namespace triescope
