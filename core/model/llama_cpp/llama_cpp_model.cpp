#include "core/model/llama_cpp/llama_cpp_model.h"

#include <llama.h>

#include <algorithm>
#include <bit>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <map>
#include <mutex>
#include <sstream>
#include <thread>
#include <utility>

#include "core/common/error.h"
#include "core/common/list_text.h"

namespace triescope {

namespace {

constexpr const char* kEngineVersion = "llama-cpp-python 0.3.36";
// LLAMA_MAX_SEQ of this version (src/llama-cparams.h, not in llama.h): the most
// seq ids a context may have; each leaf of the tree holds one.
constexpr int32_t kMaxSeq = 256;
constexpr const char* kBroken =
    "llama_cpp model: an earlier error left the engine's cells and the slots apart; reset() (a new decode) first";

// llama.cpp's log: dropped (TRIESCOPE_LLAMA_LOG=1 prints it), except that the
// last warning or error is kept for the message of the Error that follows.
struct EngineLog {
  std::mutex m;
  std::string last;
  bool keeping = false;
  bool verbose = false;
};
EngineLog& engine_log() {
  static EngineLog l;
  return l;
}

void log_callback(ggml_log_level level, const char* text, void*) {
  EngineLog& l = engine_log();
  std::lock_guard<std::mutex> g(l.m);
  if (l.verbose) std::fputs(text, stderr);
  if (level == GGML_LOG_LEVEL_CONT) {
    if (l.keeping) l.last += text;
    return;
  }
  l.keeping = level == GGML_LOG_LEVEL_WARN || level == GGML_LOG_LEVEL_ERROR;
  if (l.keeping) l.last = text;
}

void log_clear() {
  std::lock_guard<std::mutex> g(engine_log().m);
  engine_log().last.clear();
}

std::string log_last() {
  std::lock_guard<std::mutex> g(engine_log().m);
  std::string s = engine_log().last;
  std::replace(s.begin(), s.end(), '\n', ' ');
  while (!s.empty() && s.back() == ' ') s.pop_back();
  return s.empty() ? "llama.cpp logged no error" : "llama.cpp: " + s;
}

void backend_init() {
  static std::once_flag once;
  std::call_once(once, [] {
    engine_log().verbose = std::getenv("TRIESCOPE_LLAMA_LOG") != nullptr;
    llama_log_set(&log_callback, nullptr);
    llama_backend_init();
  });
}

// Strict UTF-8 (no overlongs, surrogates or code points past U+10FFFF).
bool utf8_ok(const std::string& s) {
  for (size_t i = 0; i < s.size();) {
    const auto c = static_cast<unsigned char>(s[i]);
    const size_t n = c < 0x80 ? 1 : (c >> 5) == 0x6 ? 2 : (c >> 4) == 0xE ? 3 : (c >> 3) == 0x1E ? 4 : 0;
    if (n == 0 || i + n > s.size()) return false;
    uint32_t cp = n == 1 ? c : c & (0x7Fu >> n);
    for (size_t k = 1; k < n; ++k) {
      const auto d = static_cast<unsigned char>(s[i + k]);
      if ((d >> 6) != 0x2) return false;
      cp = (cp << 6) | (d & 0x3Fu);
    }
    static constexpr uint32_t kMin[5] = {0, 0, 0x80, 0x800, 0x10000};
    if (cp < kMin[n] || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) return false;
    i += n;
  }
  return true;
}

// Guarded reads of a state blob; every failure names the byte and the version.
class BlobReader {
 public:
  BlobReader(const uint8_t* d, size_t n) : d_(d), n_(n) {}
  template <class T>
  T get(const char* what) {
    need(sizeof(T), what);
    T v;
    std::memcpy(&v, d_ + off_, sizeof(T));
    off_ += sizeof(T);
    return v;
  }
  void skip(uint64_t bytes, const char* what) {
    need(bytes, what);
    off_ += static_cast<size_t>(bytes);
  }
  void expect(bool ok, const std::string& what) const { TS_CHECK(ok, fail(what)); }
  bool at_end() const { return off_ == n_; }

 private:
  void need(uint64_t bytes, const char* what) const {
    TS_CHECK(bytes <= n_ - off_, fail(std::string(what) + " (" + std::to_string(bytes) + " bytes) runs past the end"));
  }
  std::string fail(const std::string& what) const {
    std::ostringstream o;
    o << "llama_cpp model: reading the engine's cells back (llama_state_get_data): " << what << " at byte " << off_ << " of "
      << n_ << " (the state format of " << kEngineVersion << "; another llama.cpp may write another)";
    return o.str();
  }
  const uint8_t* d_;
  size_t n_;
  size_t off_ = 0;
};

}  // namespace

std::vector<LlamaCppCell> llama_cpp_state_cells(const uint8_t* data, size_t size, int32_t n_layer, int32_t n_seq_max) {
  BlobReader b(data, size);
  const auto arch_len = b.get<uint32_t>("the arch string's length");
  b.expect(arch_len <= 256, "an arch string of " + std::to_string(arch_len) + " bytes");
  b.skip(arch_len, "the arch string");
  const auto n_stream = b.get<uint32_t>("n_stream");
  b.expect(n_stream == 1, "n_stream = " + std::to_string(n_stream) + ", expected 1 (kv_unified = true)");
  const auto cell_count = b.get<uint32_t>("the cell count");
  b.expect(cell_count <= size / 8, "a cell count of " + std::to_string(cell_count) + " in a blob this size");
  std::vector<LlamaCppCell> cells(cell_count);
  for (uint32_t c = 0; c < cell_count; ++c) {
    LlamaCppCell& cell = cells[c];
    cell.pos = b.get<int32_t>("a cell's pos");
    b.expect(cell.pos >= 0, "cell " + std::to_string(c) + ": pos " + std::to_string(cell.pos));
    const auto n_seq = b.get<uint32_t>("a cell's n_seq_id");
    b.expect(n_seq >= 1 && n_seq <= static_cast<uint32_t>(n_seq_max),
             "cell " + std::to_string(c) + ": n_seq_id " + std::to_string(n_seq) + " outside [1, " + std::to_string(n_seq_max) + "]");
    for (uint32_t k = 0; k < n_seq; ++k) {
      const auto s = b.get<int32_t>("a cell's seq id");
      b.expect(s >= 0 && s < n_seq_max && (k == 0 || s > cell.seq_ids.back()),
               "cell " + std::to_string(c) + ": seq id " + std::to_string(s) + " out of range or out of order");
      cell.seq_ids.push_back(s);
    }
  }
  if (cell_count > 0) {  // the K and V rows (llama_kv_cache::state_write_data), skipped but sized
    const auto v_trans = b.get<uint32_t>("v_trans");
    b.expect(v_trans <= 1, "v_trans = " + std::to_string(v_trans));
    const auto layers = b.get<uint32_t>("n_layer");
    b.expect(layers == static_cast<uint32_t>(n_layer), "n_layer = " + std::to_string(layers) + ", the model has " + std::to_string(n_layer));
    for (uint32_t l = 0; l < layers; ++l) {
      (void)b.get<int32_t>("a K type");
      const auto row = b.get<uint64_t>("a K row size");
      b.expect(row > 0 && row <= (uint64_t{1} << 24), "a K row of " + std::to_string(row) + " bytes");
      b.skip(row * cell_count, "the K rows");
    }
    for (uint32_t l = 0; l < layers; ++l) {
      (void)b.get<int32_t>("a V type");
      if (v_trans == 0) {
        const auto row = b.get<uint64_t>("a V row size");
        b.expect(row > 0 && row <= (uint64_t{1} << 24), "a V row of " + std::to_string(row) + " bytes");
        b.skip(row * cell_count, "the V rows");
      } else {
        const auto el = b.get<uint32_t>("a V element size");
        const auto width = b.get<uint32_t>("a V width");
        b.expect(el > 0 && el <= 8 && width > 0 && width <= (1u << 20), "a transposed V of " + std::to_string(width) + " x " + std::to_string(el) + " bytes");
        b.skip(uint64_t{el} * width * cell_count, "the transposed V");
      }
    }
  }
  b.expect(b.at_end(), "bytes after the last V row");
  return cells;
}

struct LlamaCppModel::Impl {
  LlamaCppOptions opt;
  llama_model* model = nullptr;
  llama_context* ctx = nullptr;
  const llama_vocab* vocab = nullptr;
  llama_memory_t mem = nullptr;
  int32_t V = 0, n_layer = 0, n_head = 0, n_head_kv = 0, n_embd = 0, n_seq_max = 0, n_batch = 0, n_ctx = 0;

  // The shadow: what the engine holds for each of our slots. pos < 0: nothing.
  // seq >= 0 only at a leaf: its seq id, whose cells are its ancestors-or-self.
  struct Node {
    int32_t pos = -1;
    int32_t parent = -1;  // slot of the parent, -1 at a root
    int32_t seq = -1;
  };
  std::vector<Node> nodes;
  std::vector<int32_t> owner;  // [n_seq_max] slot owning each seq id, -1: free
  bool broken = false;
  int32_t cells_read = -1, seqs_read = -1;
  std::vector<uint8_t> blob;

  ~Impl() {
    if (ctx) llama_free(ctx);
    if (model) llama_model_free(model);
  }

  // Per slot, the seq ids its cell should hold (ascending): the seq ids of
  // the leaves below it.
  std::vector<std::vector<int32_t>> seq_sets() const {
    std::vector<std::vector<int32_t>> sets(nodes.size());
    for (int32_t s = 0; s < n_seq_max; ++s)
      for (int32_t x = owner[static_cast<size_t>(s)]; x >= 0; x = nodes[static_cast<size_t>(x)].parent) sets[static_cast<size_t>(x)].push_back(s);
    return sets;
  }

  std::vector<LlamaCppCell> read_cells() {
    const size_t n = llama_state_get_size(ctx);
    TS_CHECK(n > 0, "llama_cpp model: llama_state_get_size failed: " << log_last());
    blob.resize(n);
    const size_t w = llama_state_get_data(ctx, blob.data(), n);
    TS_CHECK(w == n, "llama_cpp model: llama_state_get_data wrote " << w << " of " << n << " bytes: " << log_last());
    return llama_cpp_state_cells(blob.data(), n, n_layer, n_seq_max);
  }

  // The cells read back must be the shadow's, one per written slot, matched
  // by (pos, seq ids); with `in`, llama.cpp's rule over them must give every
  // query exactly its mask row whichever of its seq ids (tok_seqs[i]) is the
  // first: llama.cpp reads a token's seq ids through a std::unordered_set,
  // so which one it takes is its own choice.
  void check_cells(const char* after, const StepInput* in = nullptr, const std::vector<std::vector<int32_t>>* tok_seqs = nullptr) {
    const std::vector<LlamaCppCell> cells = read_cells();
    const auto sets = seq_sets();
    std::map<std::pair<int32_t, std::vector<int32_t>>, int32_t> slot_of;
    int32_t used = 0;
    for (size_t x = 0; x < nodes.size(); ++x) {
      if (nodes[x].pos < 0) continue;
      ++used;
      TS_CHECK(!sets[x].empty(), "llama_cpp model: internal: slot " << x << " is on no leaf's sequence");
      const auto [it, fresh] = slot_of.emplace(std::make_pair(nodes[x].pos, sets[x]), static_cast<int32_t>(x));
      TS_CHECK(fresh, "llama_cpp model: internal: slots " << it->second << " and " << x << " would be the same cell (pos " << nodes[x].pos
                                                          << ", seq ids " << list_text(sets[x], "{", "}") << ")");
    }
    TS_CHECK(static_cast<int32_t>(cells.size()) == used, "llama_cpp model: after " << after << " the engine holds " << cells.size()
                                                                                 << " cells, the slots say " << used);
    std::vector<int32_t> cell_slot(cells.size());
    std::vector<char> seen(nodes.size(), 0);
    std::vector<char> seq_seen(static_cast<size_t>(n_seq_max), 0);
    int32_t seqs = 0;
    for (size_t r = 0; r < cells.size(); ++r) {
      const auto it = slot_of.find({cells[r].pos, cells[r].seq_ids});
      TS_CHECK(it != slot_of.end() && !seen[static_cast<size_t>(it->second)],
               "llama_cpp model: after " << after << " the engine's occupied cell #" << r << " (pos " << cells[r].pos << ", seq ids "
                                         << list_text(cells[r].seq_ids, "{", "}") << ") is no slot's");
      seen[static_cast<size_t>(it->second)] = 1;
      cell_slot[r] = it->second;
      for (int32_t s : cells[r].seq_ids)
        if (!seq_seen[static_cast<size_t>(s)]) seq_seen[static_cast<size_t>(s)] = 1, ++seqs;
    }
    if (in)
      for (int32_t i = 0; i < in->mask.rows; ++i)
        for (const int32_t s0 : (*tok_seqs)[static_cast<size_t>(i)]) {
          const int32_t p = in->positions[static_cast<size_t>(i)];
          int32_t seen_cells = 0;
          for (size_t r = 0; r < cells.size(); ++r) {
            if (cells[r].pos > p || !std::binary_search(cells[r].seq_ids.begin(), cells[r].seq_ids.end(), s0)) continue;
            TS_CHECK(in->mask.test(i, cell_slot[r]), "llama_cpp model: by llama.cpp's rule query " << i << " (seq id " << s0 << ", pos " << p
                                                         << ") sees cell #" << r << " = slot " << cell_slot[r] << ", which its mask row does not read");
            ++seen_cells;
          }
          TS_CHECK(seen_cells == in->mask.row_popcount(i), "llama_cpp model: by llama.cpp's rule query " << i << " (seq id " << s0 << ") sees "
                                                                                                      << seen_cells << " cells, its mask row reads "
                                                                                                      << in->mask.row_popcount(i) << " slots");
        }
    cells_read = static_cast<int32_t>(cells.size());
    seqs_read = seqs;
  }

  void seq_rm(int32_t s, int32_t p0, int32_t p1) {
    TS_CHECK(llama_memory_seq_rm(mem, s, p0, p1), "llama_cpp model: llama_memory_seq_rm(" << s << ", " << p0 << ", " << p1 << ") failed: " << log_last());
  }

  // Packs the occupied cells to the front in their order: a whole-state round
  // trip (llama_state_set_data refills cells 0, 1, ... in the order
  // llama_state_get_data wrote them). llama_memory_seq_rm leaves holes that
  // the next cells would fill, placing a node before its ancestors; packed,
  // new cells append, so every path stays in ascending cell order, the order
  // flash attention accumulates in (see compact()).
  void pack() {
    const size_t n = llama_state_get_size(ctx);
    TS_CHECK(n > 0, "llama_cpp model: llama_state_get_size failed: " << log_last());
    blob.resize(n);
    TS_CHECK(llama_state_get_data(ctx, blob.data(), n) == n, "llama_cpp model: llama_state_get_data failed: " << log_last());
    log_clear();
    TS_CHECK(llama_state_set_data(ctx, blob.data(), n) == n, "llama_cpp model: packing the cells (llama_state_set_data) failed: " << log_last());
  }

  // A physical copy of sequence `src`'s cells as sequence `dst` (new cells).
  void seq_copy_cells(int32_t src, int32_t dst) {
    const size_t n = llama_state_seq_get_size(ctx, src);
    TS_CHECK(n > 0, "llama_cpp model: llama_state_seq_get_size(" << src << ") failed: " << log_last());
    blob.resize(n);
    TS_CHECK(llama_state_seq_get_data(ctx, blob.data(), n, src) == n, "llama_cpp model: llama_state_seq_get_data(" << src << ") failed: " << log_last());
    TS_CHECK(llama_state_seq_set_data(ctx, blob.data(), n, dst) > 0,
             "llama_cpp model: copying sequence " << src << " to " << dst << " failed (no free cells? raise model.n_ctx): " << log_last());
  }

  // A forward pass's pieces, in order (see forward()).
  struct SeqCp {
    int32_t src, dst, p1;
  };
  // The step's leaves (queries no query of the step extends) and their seq ids.
  struct StepLeaves {
    std::vector<char> has_child;        // [q] a query of the step extends this one
    std::vector<int32_t> leaf_seq;      // [q] a leaf's seq id, -1 elsewhere
    std::vector<int32_t> inherit_from;  // [q] the written slot whose seq id the leaf takes over, -1: a fresh seq id
    std::vector<SeqCp> cps;             // the fresh seq ids put on their written ancestors' paths
  };
  std::vector<int32_t> step_slot_queries(const StepInput& in) const;
  std::vector<int32_t> step_parents(const StepInput& in, const std::vector<int32_t>& qof) const;
  StepLeaves step_leaves(const std::vector<int32_t>& qof, const std::vector<int32_t>& parent) const;
  void step_decode(const StepInput& in, const std::vector<SeqCp>& cps, std::vector<std::vector<llama_seq_id>>& tok_seqs);
  void step_shadow(const StepInput& in, const std::vector<int32_t>& parent, const StepLeaves& lv);
  void step_logits(const StepInput& in, Logits& out) const;
};

LlamaCppModel::LlamaCppModel(LlamaCppOptions opt) : p_(std::make_unique<Impl>()) {
  Impl& m = *p_;
  m.opt = std::move(opt);
  backend_init();
  TS_CHECK(std::filesystem::is_regular_file(m.opt.path), "llama_cpp model: \"" << m.opt.path << "\" is not a file (a .gguf model)");
  // n_batch = n_ctx must be >= n_seq_max: llama.cpp reserves an output row per seq id (else it aborts).
  TS_CHECK(m.opt.n_ctx >= kMaxSeq, "llama_cpp model: n_ctx " << m.opt.n_ctx << " is below " << kMaxSeq << " (one cell per seq id at least)");
  TS_CHECK(m.opt.n_ubatch >= 1, "llama_cpp model: n_ubatch " << m.opt.n_ubatch << " must be >= 1");
  if (m.opt.threads <= 0) m.opt.threads = static_cast<int32_t>(std::max(1u, std::thread::hardware_concurrency()));
  llama_model_params mp = llama_model_default_params();
  mp.n_gpu_layers = 0;
  log_clear();
  m.model = llama_model_load_from_file(m.opt.path.c_str(), mp);
  TS_CHECK(m.model, "llama_cpp model: llama.cpp could not load \"" << m.opt.path << "\": " << log_last());
  m.vocab = llama_model_get_vocab(m.model);
  m.V = llama_vocab_n_tokens(m.vocab);
  m.n_layer = llama_model_n_layer(m.model);
  m.n_head = llama_model_n_head(m.model);
  m.n_head_kv = llama_model_n_head_kv(m.model);
  m.n_embd = llama_model_n_embd(m.model);
  TS_CHECK(m.V > 0 && m.n_layer > 0 && m.n_head > 0 && m.n_head_kv > 0, "llama_cpp model: \"" << m.opt.path << "\" is no decoder model llama.cpp can run here");
  llama_context_params cp = llama_context_default_params();
  cp.n_ctx = static_cast<uint32_t>(m.opt.n_ctx);
  cp.n_batch = static_cast<uint32_t>(m.opt.n_ctx);  // one step = one llama_decode, whatever its size
  cp.n_ubatch = std::min<uint32_t>(static_cast<uint32_t>(m.opt.n_ubatch), cp.n_batch);
  cp.n_seq_max = kMaxSeq;
  cp.n_threads = cp.n_threads_batch = m.opt.threads;
  cp.flash_attn_type = m.opt.flash_attn ? LLAMA_FLASH_ATTN_TYPE_ENABLED : LLAMA_FLASH_ATTN_TYPE_DISABLED;
  cp.kv_unified = true;  // one cache for all seq ids: with false llama_decode refuses a token of several sequences
  cp.type_k = cp.type_v = GGML_TYPE_F16;
  cp.no_perf = true;
  log_clear();
  m.ctx = llama_init_from_model(m.model, cp);
  TS_CHECK(m.ctx, "llama_cpp model: llama.cpp could not make a context for \"" << m.opt.path << "\": " << log_last());
  m.mem = llama_get_memory(m.ctx);
  m.n_seq_max = static_cast<int32_t>(llama_n_seq_max(m.ctx));
  m.n_batch = static_cast<int32_t>(llama_n_batch(m.ctx));
  m.n_ctx = static_cast<int32_t>(llama_n_ctx(m.ctx));
  TS_CHECK(m.mem && m.n_seq_max >= 1 && m.n_seq_max <= kMaxSeq, "llama_cpp model: the context has no usable KV cache");
  m.owner.assign(static_cast<size_t>(m.n_seq_max), -1);
}

LlamaCppModel::~LlamaCppModel() = default;

int32_t LlamaCppModel::vocab_size() const { return p_->V; }
int32_t LlamaCppModel::threads() const { return p_->opt.threads; }
int32_t LlamaCppModel::engine_cells() const { return p_->cells_read; }
int32_t LlamaCppModel::engine_seq_ids() const { return p_->seqs_read; }
void LlamaCppModel::set_check_cells(bool on) {
  p_->opt.check_cells = on;
  if (!on) p_->cells_read = p_->seqs_read = -1;
}
std::vector<LlamaCppCell> LlamaCppModel::read_cells() { return p_->read_cells(); }

namespace {

int32_t slot_of(const StepInput& in, int32_t i) { return in.slots[static_cast<size_t>(i)]; }

// 3. Every token carries the seq ids of the step's leaves below it.
std::vector<std::vector<llama_seq_id>> token_seqs(const std::vector<int32_t>& qof, const std::vector<int32_t>& parent,
                                                  const std::vector<char>& has_child, const std::vector<int32_t>& leaf_seq) {
  const auto q = static_cast<int32_t>(parent.size());
  std::vector<std::vector<llama_seq_id>> tok_seqs(static_cast<size_t>(q));
  for (int32_t i = 0; i < q; ++i) {
    if (has_child[static_cast<size_t>(i)]) continue;
    for (int32_t x = i;;) {
      tok_seqs[static_cast<size_t>(x)].push_back(leaf_seq[static_cast<size_t>(i)]);
      const int32_t pr = parent[static_cast<size_t>(x)];
      if (pr < 0 || qof[static_cast<size_t>(pr)] < 0) break;
      x = qof[static_cast<size_t>(pr)];
    }
  }
  return tok_seqs;
}

}  // namespace

// Slot -> query of this step (-1: none); each query's slot must be free.
std::vector<int32_t> LlamaCppModel::Impl::step_slot_queries(const StepInput& in) const {
  const auto q = static_cast<int32_t>(in.tokens.size());
  std::vector<int32_t> qof(nodes.size(), -1);  // slot -> query of this step
  for (int32_t i = 0; i < q; ++i) {
    const int32_t s = slot_of(in, i);
    TS_CHECK(nodes[static_cast<size_t>(s)].pos < 0 && qof[static_cast<size_t>(s)] < 0,
             "llama_cpp model: query " << i << " writes slot " << s << ", which holds a token already: a llama.cpp cell is written once (free it by a compaction first)");
    qof[static_cast<size_t>(s)] = i;
  }
  return qof;
}

// 1. Each row: the parent (the row's slot of highest position), and the row
// must be exactly path(parent) + the query's own slot.
std::vector<int32_t> LlamaCppModel::Impl::step_parents(const StepInput& in, const std::vector<int32_t>& qof) const {
  const auto q = static_cast<int32_t>(in.tokens.size());
  std::vector<int32_t> parent(static_cast<size_t>(q), -1);
  for (int32_t i = 0; i < q; ++i) {
    const int32_t own = slot_of(in, i), p = in.positions[static_cast<size_t>(i)];
    const uint64_t* row = in.mask.row(i);
    int32_t best = -1, best_pos = -1;
    for (int32_t w = 0; w < in.mask.words_per_row; ++w)
      for (uint64_t bits = row[w]; bits != 0; bits &= bits - 1) {
        const int32_t c = w * 64 + std::countr_zero(bits);
        if (c == own) continue;
        const int32_t qc = qof[static_cast<size_t>(c)];
        const int32_t pc = qc >= 0 ? in.positions[static_cast<size_t>(qc)] : nodes[static_cast<size_t>(c)].pos;
        TS_CHECK(pc >= 0, "llama_cpp model: query " << i << "'s mask row reads slot " << c << ", which holds nothing");
        if (pc > best_pos) best = c, best_pos = pc;
      }
    TS_CHECK(in.mask.test(i, own), "llama_cpp model: query " << i << "'s mask row does not read its own slot " << own);
    if (best >= 0) {
      TS_CHECK(qof[static_cast<size_t>(best)] < i, "llama_cpp model: query " << i << " comes before its parent, query " << qof[static_cast<size_t>(best)]
                                                                                << ": llama.cpp needs each sequence's positions rising in a batch");
      TS_CHECK(p == best_pos + 1, "llama_cpp model: query " << i << " at position " << p << " reads its parent slot " << best << " at position "
                                                            << best_pos << ": llama.cpp needs a sequence's positions consecutive");
    }
    int32_t path = 0;
    bool ok = true;
    for (int32_t x = best; x >= 0;) {  // the parent's path: this step's queries first, then written slots
      ok = ok && in.mask.test(i, x);
      ++path;
      const int32_t qx = qof[static_cast<size_t>(x)];
      x = qx >= 0 ? parent[static_cast<size_t>(qx)] : nodes[static_cast<size_t>(x)].parent;
    }
    TS_CHECK(ok && in.mask.row_popcount(i) == path + 1,
             "llama_cpp model: query " << i << "'s mask row is not an ancestor path: seq ids cannot express it");
    parent[static_cast<size_t>(i)] = best;
  }
  return parent;
}

// 2. The step's leaves and their seq ids: the written ancestor's when it is
// a leaf whose seq id no sibling took yet, else a free one, put on the
// ancestor's path by seq_cp.
LlamaCppModel::Impl::StepLeaves LlamaCppModel::Impl::step_leaves(const std::vector<int32_t>& qof, const std::vector<int32_t>& parent) const {
  const auto q = static_cast<int32_t>(parent.size());
  StepLeaves lv;
  lv.has_child.assign(static_cast<size_t>(q), 0);
  for (int32_t i = 0; i < q; ++i)
    if (const int32_t pr = parent[static_cast<size_t>(i)]; pr >= 0 && qof[static_cast<size_t>(pr)] >= 0) lv.has_child[static_cast<size_t>(qof[static_cast<size_t>(pr)])] = 1;
  auto anchor = [&](int32_t i) {  // the nearest written (not this step's) ancestor slot, -1 for none
    int32_t x = parent[static_cast<size_t>(i)];
    while (x >= 0 && qof[static_cast<size_t>(x)] >= 0) x = parent[static_cast<size_t>(qof[static_cast<size_t>(x)])];
    return x;
  };
  lv.leaf_seq.assign(static_cast<size_t>(q), -1);
  lv.inherit_from.assign(static_cast<size_t>(q), -1);
  std::vector<int32_t> fresh_leaves;
  std::vector<char> taken(static_cast<size_t>(n_seq_max), 0);
  for (int32_t i = 0; i < q; ++i) {
    if (lv.has_child[static_cast<size_t>(i)]) continue;
    const int32_t e = anchor(i);
    const int32_t es = e >= 0 ? nodes[static_cast<size_t>(e)].seq : -1;
    if (es >= 0 && !taken[static_cast<size_t>(es)]) {
      taken[static_cast<size_t>(es)] = 1;
      lv.leaf_seq[static_cast<size_t>(i)] = es;
      lv.inherit_from[static_cast<size_t>(i)] = e;
    } else {
      fresh_leaves.push_back(i);
    }
  }
  std::vector<int32_t> free_seqs;
  for (int32_t s = 0; s < n_seq_max && free_seqs.size() < fresh_leaves.size(); ++s)
    if (owner[static_cast<size_t>(s)] < 0) free_seqs.push_back(s);
  TS_CHECK(free_seqs.size() == fresh_leaves.size(),
           "llama_cpp model: this step needs " << fresh_leaves.size() << " new sequence ids, llama.cpp has " << free_seqs.size() << " free of "
                                               << n_seq_max << " (one per leaf; pruned leaves keep theirs until garbage collection: lower beam.gc_interval)");
  const auto sets = fresh_leaves.empty() ? std::vector<std::vector<int32_t>>{} : seq_sets();
  for (size_t k = 0; k < fresh_leaves.size(); ++k) {
    const int32_t i = fresh_leaves[k], s = free_seqs[k], e = anchor(i);
    lv.leaf_seq[static_cast<size_t>(i)] = s;
    if (e >= 0) {
      TS_CHECK(!sets[static_cast<size_t>(e)].empty(), "llama_cpp model: internal: slot " << e << " is on no leaf's sequence");
      lv.cps.push_back({sets[static_cast<size_t>(e)].front(), s, nodes[static_cast<size_t>(e)].pos + 1});
    }
  }
  return lv;
}

// 4. The engine: the new sequences onto their ancestors' paths, then one
// llama_decode (each token's seq ids sorted in place).
void LlamaCppModel::Impl::step_decode(const StepInput& in, const std::vector<SeqCp>& cps, std::vector<std::vector<llama_seq_id>>& tok_seqs) {
  const auto q = static_cast<int32_t>(in.tokens.size());
  std::vector<llama_token> tokens(in.tokens.begin(), in.tokens.end());
  std::vector<llama_pos> pos(in.positions.begin(), in.positions.end());
  std::vector<int32_t> n_seq(static_cast<size_t>(q));
  std::vector<llama_seq_id*> seq_ptr(static_cast<size_t>(q));
  std::vector<int8_t> want(static_cast<size_t>(q), in.logits_rows.empty() ? 1 : 0);
  for (int32_t r : in.logits_rows) want[static_cast<size_t>(r)] = 1;
  for (int32_t i = 0; i < q; ++i) {
    auto& s = tok_seqs[static_cast<size_t>(i)];
    std::sort(s.begin(), s.end());
    n_seq[static_cast<size_t>(i)] = static_cast<int32_t>(s.size());
    seq_ptr[static_cast<size_t>(i)] = s.data();
  }

  broken = true;
  for (const SeqCp& c : cps) llama_memory_seq_cp(mem, c.src, c.dst, 0, c.p1);
  llama_batch batch{q, tokens.data(), nullptr, pos.data(), n_seq.data(), seq_ptr.data(), want.data()};
  log_clear();
  const int32_t rc = llama_decode(ctx, batch);
  TS_CHECK(rc == 0, "llama_cpp model: llama_decode returned " << rc << (rc == 1 ? " (no free cells for the step: raise model.n_ctx)" : "") << ": " << log_last());
}

// 5. The shadow follows: each query's slot written, each leaf's seq id moved
// from the slot it took it over from (if any) to the leaf.
void LlamaCppModel::Impl::step_shadow(const StepInput& in, const std::vector<int32_t>& parent, const StepLeaves& lv) {
  const auto q = static_cast<int32_t>(in.tokens.size());
  for (int32_t i = 0; i < q; ++i) nodes[static_cast<size_t>(slot_of(in, i))] = {in.positions[static_cast<size_t>(i)], parent[static_cast<size_t>(i)], -1};
  for (int32_t i = 0; i < q; ++i) {
    if (lv.has_child[static_cast<size_t>(i)]) continue;
    if (const int32_t e = lv.inherit_from[static_cast<size_t>(i)]; e >= 0) nodes[static_cast<size_t>(e)].seq = -1;
    nodes[static_cast<size_t>(slot_of(in, i))].seq = lv.leaf_seq[static_cast<size_t>(i)];
    owner[static_cast<size_t>(lv.leaf_seq[static_cast<size_t>(i)])] = slot_of(in, i);
  }
}

// 6. The logits of the rows the caller reads (all when it lists none).
void LlamaCppModel::Impl::step_logits(const StepInput& in, Logits& out) const {
  const auto q = static_cast<int32_t>(in.tokens.size());
  const auto rows = in.logits_rows.empty() ? q : static_cast<int32_t>(in.logits_rows.size());
  out.resize(rows, V);
  for (int32_t r = 0; r < rows; ++r) {
    const int32_t i = in.logits_rows.empty() ? r : in.logits_rows[static_cast<size_t>(r)];
    const float* l = llama_get_logits_ith(ctx, i);
    TS_CHECK(l, "llama_cpp model: no logits for query " << i << ": " << log_last());
    std::copy_n(l, static_cast<size_t>(V), out.row(r));
  }
}

void LlamaCppModel::forward(const StepInput& in, Logits& out) {
  Impl& m = *p_;
  step_input_check(in, m.V);
  TS_CHECK(!m.broken, kBroken);
  const auto q = static_cast<int32_t>(in.tokens.size());
  TS_CHECK(q > 0, "llama_cpp model: a forward pass with no queries");
  TS_CHECK(q <= m.n_batch, "llama_cpp model: a step of " << q << " tokens is more than one llama_decode takes (n_batch = n_ctx = "
                                                          << m.n_batch << "); raise model.n_ctx");
  if (m.nodes.size() < static_cast<size_t>(in.num_slots)) m.nodes.resize(static_cast<size_t>(in.num_slots));
  const std::vector<int32_t> qof = m.step_slot_queries(in);
  const std::vector<int32_t> parent = m.step_parents(in, qof);                       // 1. the rows: parents
  const Impl::StepLeaves lv = m.step_leaves(qof, parent);                             // 2. the leaves' seq ids
  std::vector<std::vector<llama_seq_id>> tok_seqs = token_seqs(qof, parent, lv.has_child, lv.leaf_seq);  // 3.
  m.step_decode(in, lv.cps, tok_seqs);                                                // 4. llama_decode (broken until 7.)
  m.step_shadow(in, parent, lv);                                                      // 5. the shadow follows
  m.step_logits(in, out);                                                             // 6. the logits
  // 7. The proof: the cells read back, and llama.cpp's rule over them.
  if (m.opt.check_cells) m.check_cells("the forward pass", &in, &tok_seqs);
  m.broken = false;
}

void LlamaCppModel::compact(const CompactionPlan& plan) {
  Impl& m = *p_;
  TS_CHECK(!m.broken, kBroken);
  const auto n_old = static_cast<int32_t>(m.nodes.size());
  auto node = [&](int32_t x) -> Impl::Node& { return m.nodes[static_cast<size_t>(x)]; };
  auto written = [&](int32_t x) { return x < n_old && node(x).pos >= 0; };
  for (int32_t x = std::max(plan.old_num_slots, 0); x < n_old; ++x)
    TS_CHECK(node(x).pos < 0, "llama_cpp model: a compaction plan over " << plan.old_num_slots << " slots, but slot " << x << " holds a token");
  // The new slots each old slot feeds, ascending: the first keeps its cell, each further one is a copy.
  std::vector<std::vector<int32_t>> uses(static_cast<size_t>(n_old));
  for (int32_t i = 0; i < plan.new_num_slots(); ++i) {
    const int32_t x = plan.src[static_cast<size_t>(i)];
    TS_CHECK(x >= 0 && x < plan.old_num_slots, "llama_cpp model: compaction plan src[" << i << "] = " << x << " outside [0, " << plan.old_num_slots << ")");
    if (written(x)) uses[static_cast<size_t>(x)].push_back(i);
  }
  auto kept = [&](int32_t x) { return !uses[static_cast<size_t>(x)].empty(); };
  std::vector<int32_t> kept_children(static_cast<size_t>(n_old), 0);
  for (int32_t x = 0; x < n_old; ++x) {
    if (!written(x) || !kept(x)) continue;
    const int32_t pr = node(x).parent;
    if (pr < 0) continue;
    TS_CHECK(kept(pr), "llama_cpp model: the compaction keeps slot " << x << " but frees its parent slot " << pr
                                                                   << ": the parent's cell holds the child's seq id, so llama.cpp cannot free it");
    TS_CHECK(uses[static_cast<size_t>(pr)].size() >= uses[static_cast<size_t>(x)].size(),
             "llama_cpp model: the compaction copies slot " << x << " " << uses[static_cast<size_t>(x)].size() << " times but its parent slot " << pr
                                                            << " only " << uses[static_cast<size_t>(pr)].size() << ": only whole sequences can be copied");
    ++kept_children[static_cast<size_t>(pr)];
  }

  // Occurrence k of a slot hangs under occurrence k of its parent; a copy must be one path.
  std::map<std::pair<int32_t, int32_t>, int32_t> copied_children;  // (old slot, k) -> children copied at k
  for (int32_t x = 0; x < n_old; ++x)
    if (written(x) && node(x).parent >= 0)
      for (size_t k = 1; k < uses[static_cast<size_t>(x)].size(); ++k) {
        const int32_t c = ++copied_children[{node(x).parent, static_cast<int32_t>(k)}];
        TS_CHECK(c == 1, "llama_cpp model: the compaction copies slot " << node(x).parent << " with two children below it: a copy must be one path (one sequence)");
      }
  int64_t copies = 0, seqs_left = 0;
  for (int32_t x = 0; x < n_old; ++x)
    if (written(x))
      for (size_t k = 1; k < uses[static_cast<size_t>(x)].size(); ++k) copies += copied_children.count({x, static_cast<int32_t>(k)}) ? 0 : 1;
  for (int32_t s = 0; s < m.n_seq_max; ++s) seqs_left += m.owner[static_cast<size_t>(s)] < 0 || !kept(m.owner[static_cast<size_t>(s)]) ? 1 : 0;
  TS_CHECK(copies <= seqs_left, "llama_cpp model: the compaction copies " << copies << " sequences, llama.cpp has " << seqs_left << " seq ids left of " << m.n_seq_max);

  m.broken = true;
  // 1. Freed leaves: their seq ids leave the engine; a kept node that loses
  // every leaf below becomes a leaf and keeps one of their seq ids, cut
  // back to its own position.
  for (int32_t s = 0; s < m.n_seq_max; ++s) {
    const int32_t o = m.owner[static_cast<size_t>(s)];
    if (o < 0 || kept(o)) continue;
    int32_t a = node(o).parent;
    while (a >= 0 && !kept(a)) a = node(a).parent;
    m.owner[static_cast<size_t>(s)] = -1;
    node(o).seq = -1;
    if (a >= 0 && kept_children[static_cast<size_t>(a)] == 0 && node(a).seq < 0) {
      m.seq_rm(s, node(a).pos + 1, -1);
      node(a).seq = s;
      m.owner[static_cast<size_t>(s)] = a;
    } else {
      m.seq_rm(s, -1, -1);
    }
  }
  // Holes packed away (see pack()): with flash attention on the CPU a query's
  // result depends on the order of its cells (an online softmax accumulating
  // V in f16, cell by cell), so a node placed in a freed cell before its
  // ancestors would change the scores: trie and batch beam search agree bit
  // for bit only with every path in ascending cell order.
  bool freed = false;
  for (int32_t x = 0; x < n_old && !freed; ++x) freed = written(x) && !kept(x);
  if (freed) m.pack();
  // 2. Copies (a gather that repeats a source: batch beam search's reorder):
  // each copied chain is one sequence, copied cell by cell into new cells.
  std::vector<std::vector<int32_t>> copy_seq(static_cast<size_t>(n_old));  // [x][k]: the seq id of copy k of a copied leaf x
  std::vector<std::vector<int32_t>> sets;
  bool cut = false;  // a copy cut back below its leaf leaves holes: packed again
  for (int32_t x = 0; x < n_old; ++x) {
    if (!written(x) || uses[static_cast<size_t>(x)].size() < 2) continue;
    for (size_t k = 1; k < uses[static_cast<size_t>(x)].size(); ++k) {
      if (copied_children.count({x, static_cast<int32_t>(k)})) continue;  // not the copy's leaf
      if (sets.empty()) sets = m.seq_sets();
      int32_t dst = -1;
      for (int32_t s = 0; s < m.n_seq_max && dst < 0; ++s)
        if (m.owner[static_cast<size_t>(s)] < 0) dst = s;
      TS_CHECK(dst >= 0, "llama_cpp model: the compaction copies more sequences than llama.cpp has free seq ids (" << m.n_seq_max << ")");
      TS_CHECK(!sets[static_cast<size_t>(x)].empty(), "llama_cpp model: internal: slot " << x << " is on no leaf's sequence");
      const int32_t src = sets[static_cast<size_t>(x)].front();
      m.seq_copy_cells(src, dst);
      if (m.owner[static_cast<size_t>(src)] != x) {  // a sequence through x that goes on below it: the copy stops at x
        m.seq_rm(dst, node(x).pos + 1, -1);
        cut = true;
      }
      m.owner[static_cast<size_t>(dst)] = n_old;  // taken (the new slot is set below)
      copy_seq[static_cast<size_t>(x)].resize(uses[static_cast<size_t>(x)].size(), -1);
      copy_seq[static_cast<size_t>(x)][k] = dst;
    }
  }
  if (cut) m.pack();
  // 3. Our slots are handles: renumbered by the plan.
  std::vector<Impl::Node> next(static_cast<size_t>(plan.new_num_slots()));
  std::fill(m.owner.begin(), m.owner.end(), -1);
  for (int32_t x = 0; x < n_old; ++x) {
    if (!written(x)) continue;
    const auto& u = uses[static_cast<size_t>(x)];
    const Impl::Node& o = node(x);
    for (size_t k = 0; k < u.size(); ++k) {
      Impl::Node& n = next[static_cast<size_t>(u[k])];
      n = {o.pos, o.parent >= 0 ? uses[static_cast<size_t>(o.parent)][k] : -1, -1};
      n.seq = k == 0 ? o.seq : (copy_seq[static_cast<size_t>(x)].size() > k ? copy_seq[static_cast<size_t>(x)][k] : -1);
      if (n.seq >= 0) m.owner[static_cast<size_t>(n.seq)] = u[k];
    }
  }
  m.nodes = std::move(next);
  if (m.opt.check_cells) m.check_cells("the compaction");
  m.broken = false;
}

void LlamaCppModel::reset() {
  Impl& m = *p_;
  llama_memory_clear(m.mem, false);  // the cells' metadata; their data is written before it is read
  m.nodes.clear();
  std::fill(m.owner.begin(), m.owner.end(), -1);
  m.broken = false;
  m.cells_read = m.seqs_read = -1;  // nothing read back yet
}

nlohmann::json LlamaCppModel::describe() const {
  const Impl& m = *p_;
  return {{"type", "llama_cpp"},
          {"path", m.opt.path},
          {"engine", "llama.cpp"},
          {"engine_version", std::string(kEngineVersion) + " / llama.cpp " + llama_version() + " (ggml " + ggml_version() + ", " + ggml_commit() + ")"},
          {"engine_system_info", llama_print_system_info()},
          {"flash_attn", m.opt.flash_attn},
          {"kv_unified", true},
          {"type_k", "f16"},
          {"type_v", "f16"},
          {"n_ctx", m.n_ctx},
          {"n_ubatch", static_cast<int32_t>(llama_n_ubatch(m.ctx))},
          {"n_seq_max", m.n_seq_max},
          {"threads", m.opt.threads},
          {"check_cells", m.opt.check_cells}};
}

KvShape LlamaCppModel::kv_shape() const {
  const Impl& m = *p_;
  KvShape s;
  s.layers = m.n_layer;
  s.kv_heads = m.n_head_kv;
  s.head_dim = m.n_embd / m.n_head;
  s.dtype_bytes = 2;  // f16 K and V
  return s;
}

std::vector<std::string> LlamaCppModel::vocab_strings() const {
  const Impl& m = *p_;
  std::vector<std::string> v(static_cast<size_t>(m.V));
  std::vector<char> buf(256);
  for (int32_t t = 0; t < m.V; ++t) {
    int32_t n = llama_token_to_piece(m.vocab, t, buf.data(), static_cast<int32_t>(buf.size()), 0, true);
    if (n < 0) {
      buf.resize(static_cast<size_t>(-n));
      n = llama_token_to_piece(m.vocab, t, buf.data(), static_cast<int32_t>(buf.size()), 0, true);
    }
    std::string piece = n > 0 ? std::string(buf.data(), static_cast<size_t>(n)) : std::string();
    // As the transformer's tokenizer shows a token: its text, or its vocabulary entry when that is no UTF-8 (a byte token).
    if (!utf8_ok(piece)) piece = llama_vocab_get_text(m.vocab, t);
    v[static_cast<size_t>(t)] = utf8_ok(piece) ? piece : std::to_string(t);
  }
  return v;
}

nlohmann::json LlamaCppModel::engine_state() const {
  const Impl& m = *p_;
  if (!m.opt.check_cells || m.cells_read < 0) return nullptr;
  return {{"engine_cells", m.cells_read}, {"engine_seq_ids", m.seqs_read}};
}

std::vector<int32_t> LlamaCppModel::tokenize(const std::string& text) const {
  const Impl& m = *p_;
  std::vector<llama_token> ids(text.size() + 8);
  int32_t n = llama_tokenize(m.vocab, text.data(), static_cast<int32_t>(text.size()), ids.data(), static_cast<int32_t>(ids.size()), true, true);
  if (n < 0) {
    ids.resize(static_cast<size_t>(-n));
    n = llama_tokenize(m.vocab, text.data(), static_cast<int32_t>(text.size()), ids.data(), static_cast<int32_t>(ids.size()), true, true);
  }
  TS_CHECK(n >= 0, "llama_cpp model: llama_tokenize failed: " << log_last());
  return {ids.begin(), ids.begin() + n};
}

}  // namespace triescope
