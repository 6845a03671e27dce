// CPU twin: core/model/tree_attention.h (tree_attention_ref)
#include "cuda/tree_attention.cuh"
#include "cuda/detail/device_status.h"
#include "cuda/tree_attention_math.h"
#include "cuda/host_waits.h"

#include <algorithm>
#include <cmath>

namespace triescope::cuda {

namespace {

constexpr int kWarps = ta::kWarps;
constexpr unsigned kFull = 0xffffffffu;

// Block (query r, KV head, group of HG query heads of that KV head, split).
// Lane l holds elements d = i * 32 + l (i < VEC) of q, K, V and the output,
// so each K/V row load is a coalesced 128-byte transaction per i. Every warp
// runs its own online softmax (running max m, sum l, weighted V sum acc) over
// its entries; the warps are merged through shared memory at the end. Each
// K/V row a block touches is read once for all HG heads (GQA sharing).
template <int VEC, int HG>
__global__ void __launch_bounds__(kWarps * 32)
    tree_attention_kernel(TreeAttentionArgs a, TreeAttentionPlan p, float* part_acc, float* part_ml) {
  __shared__ float sm_m[kWarps][HG], sm_l[kWarps][HG];
  __shared__ float sm_acc[kWarps][HG][VEC * 32];
  const int32_t r = blockIdx.x;
  const ta::Heads hb = ta::block_heads(blockIdx.y, p.head_groups, HG, a.heads / a.kv_heads);
  const int32_t kvh = hb.kvh, h0 = hb.h0, nh = hb.nh;  // HG == p.heads_per_block
  const int32_t split = blockIdx.z;
  const ta::Range rg = ta::split_range(a.indptr[r], a.indptr[r + 1], split, p.splits, p.chunk);
  const int32_t lo = rg.lo, hi = rg.hi;
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  const int32_t hd = a.head_dim;
  const int64_t row = static_cast<int64_t>(a.kv_heads) * hd;
  const float* K = a.kv + static_cast<int64_t>(kvh) * hd;
  const float* V = a.kv + static_cast<int64_t>(a.capacity) * row + static_cast<int64_t>(kvh) * hd;

  float qv[HG][VEC], acc[HG][VEC], m[HG], l[HG];
#pragma unroll
  for (int h = 0; h < HG; ++h) {
    m[h] = -INFINITY;
    l[h] = 0.0f;
#pragma unroll
    for (int i = 0; i < VEC; ++i) {
      const int d = i * 32 + lane;
      // The scale is folded into q once instead of into every score.
      qv[h][i] = (h < nh && d < hd) ? a.q[(static_cast<int64_t>(r) * a.heads + h0 + h) * hd + d] * a.scale : 0.0f;
      acc[h][i] = 0.0f;
    }
  }
  for (int32_t j = lo + warp; j < hi; j += kWarps) {
    const int32_t s = a.slot_ids[j];  // the same for the whole warp: the branch below is uniform
    if (s < 0 || s >= a.capacity) {
      if (lane == 0) detail::status_report(reinterpret_cast<KernelStatus*>(a.status), KernelError::slot_out_of_range, r, s);
      continue;
    }
    const float* kp = K + static_cast<int64_t>(s) * row;
    const float* vp = V + static_cast<int64_t>(s) * row;
    float kx[VEC], vx[VEC];
#pragma unroll
    for (int i = 0; i < VEC; ++i) {
      const int d = i * 32 + lane;
      kx[i] = d < hd ? __ldg(kp + d) : 0.0f;
      vx[i] = d < hd ? __ldg(vp + d) : 0.0f;
    }
#pragma unroll
    for (int h = 0; h < HG; ++h) {
      if (h >= nh) continue;  // uniform across the block
      float dot = 0.0f;
#pragma unroll
      for (int i = 0; i < VEC; ++i) dot = fmaf(qv[h][i], kx[i], dot);
#pragma unroll
      for (int off = 16; off > 0; off >>= 1) dot += __shfl_xor_sync(kFull, dot, off);
      const ta::Step st = ta::online_step(m[h], dot);
      l[h] = l[h] * st.corr + st.p;
#pragma unroll
      for (int i = 0; i < VEC; ++i) acc[h][i] = fmaf(st.p, vx[i], acc[h][i] * st.corr);
      m[h] = st.m_new;
    }
  }
#pragma unroll
  for (int h = 0; h < HG; ++h) {
    if (lane == 0) {
      sm_m[warp][h] = m[h];
      sm_l[warp][h] = l[h];
    }
#pragma unroll
    for (int i = 0; i < VEC; ++i) sm_acc[warp][h][i * 32 + lane] = acc[h][i];
  }
  __syncthreads();
  for (int e = threadIdx.x; e < nh * hd; e += blockDim.x) {
    const int h = e / hd, d = e - h * hd;
    float M = -INFINITY;
#pragma unroll
    for (int w = 0; w < kWarps; ++w) M = fmaxf(M, sm_m[w][h]);
    float L = 0.0f, A = 0.0f;
#pragma unroll
    for (int w = 0; w < kWarps; ++w) {
      const float f = ta::merge_factor(sm_m[w][h], M);  // a warp that saw nothing has m = -inf: f = 0
      L = fmaf(sm_l[w][h], f, L);
      A = fmaf(sm_acc[w][h][d], f, A);
    }
    const int64_t oh = static_cast<int64_t>(r) * a.heads + h0 + h;
    if (!p.partials) {
      a.out[oh * hd + d] = ta::finish(A, L);  // an empty list gives zeros, as the twin
    } else {
      const int64_t ps = oh * p.splits + split;
      part_acc[ps * hd + d] = A;
      if (d == 0) {
        part_ml[ps * 2] = M;
        part_ml[ps * 2 + 1] = L;
      }
    }
  }
}

// Cascade items (TreeAttentionCascade): a block per (item, KV head) attends
// the item's chunk of a shared segment for all its members' query heads of
// that KV head at once: R query-head rows x C slots per sub-tile, K and V of
// the sub-tile staged together in shared memory (float4 loads, all in flight
// at once), then two register-tiled small matrix products so each
// shared-memory read feeds several FMAs:
//  - scores: thread (ty, tx) = (t / 8, t % 8) holds rows ty + 16 i (i < RT)
//    x slots tx + 8 j (j < CT); per 4 dims it reads RT q and CT K float4s
//    for RT x CT x 4 FMAs. Row i's slots sit on 8 neighbouring lanes, so the
//    online softmax (max, sum) is three shuffles, no extra pass; the running
//    max and sum of a row live in those lanes' registers;
//  - P.V: thread (ty, tx) holds rows ty RO + i (i < RO) x dims
//    tx 4 + 32 j .. + 3 (j < VEC); per slot it reads one float4 of weights and
//    VEC float4s of V for RO x VEC x 4 FMAs.
// Row and slot strides are padded by 4 floats: the float4 reads of a warp hit
// distinct banks. Three barriers per sub-tile (last round read; staged;
// weights written). Each K/V row of the chunk is read from memory once per
// block.
template <int VEC>
struct ItemTile {
  static constexpr int HDP = VEC * 32;                            // head dim padded to the lanes
  static constexpr int R = VEC <= 2 ? 64 : VEC == 4 ? 32 : 16;    // rows: tree_attention_cascade_tile_rows
  static constexpr int C = VEC <= 2 ? 32 : VEC == 4 ? 16 : 8;     // slots per sub-tile (shared memory < 48 KB)
  static constexpr int TX = 8, TY = kWarps * 32 / TX;             // threads across slots (dims), across rows
  static constexpr int RT = R / TY, CT = C / TX;                  // score tile of a thread
  static constexpr int RO = R / TY;                               // P.V rows of a thread (contiguous)
  static constexpr int KS = HDP + 4;                              // q / K / V row stride
  static constexpr int PS = R + 4;                                // weight row stride: [C x PS], a slot's rows contiguous
  static constexpr int NT = kWarps * 32;                          // threads of a block
  static constexpr int G = HDP / 4, PER = (C * G + NT - 1) / NT;  // float4s of a K (V) row; of the sub-tile per thread
  static_assert(RT >= 1 && CT >= 1 && R % TY == 0 && C % TX == 0, "tile shape");
};

template <int N>
__device__ __forceinline__ void load_rows(const float* p, float (&x)[N]) {  // N contiguous floats, 16-byte aligned for N = 4
  if constexpr (N == 4) {
    const float4 v = *reinterpret_cast<const float4*>(p);
    x[0] = v.x, x[1] = v.y, x[2] = v.z, x[3] = v.w;
  } else {
#pragma unroll
    for (int i = 0; i < N; ++i) x[i] = p[i];
  }
}

// The item's query rows into sq [R x KS], scaled, zeros past the rows and the
// head dim. Row i: member entry mlo + i / g, query head kvh * g + i % g.
template <int VEC>
__device__ __forceinline__ void item_stage_queries(const TreeAttentionArgs& a, float* sq, int tid, int32_t mlo, int32_t kvh, int32_t g,
                                                   int32_t hd, int32_t rows) {
  using T = ItemTile<VEC>;
  for (int e = tid; e < T::R * T::HDP; e += T::NT) {
    const int i = e / T::HDP, d = e - i * T::HDP;
    float v = 0.0f;
    if (i < rows && d < hd) {
      const int64_t r = a.cascade.member[mlo + i / g];
      v = a.q[(r * a.heads + kvh * g + i % g) * hd + d] * a.scale;  // the scale folded into q once
    }
    sq[i * T::KS + d] = v;
  }
}

// A thread's online-softmax state: each score row's running max and sum, the
// P.V rows' weighted V sums.
template <int VEC>
__device__ __forceinline__ void item_state_init(float (&m)[ItemTile<VEC>::RT], float (&l)[ItemTile<VEC>::RT],
                                                float (&acc)[ItemTile<VEC>::RO][VEC][4]) {
  using T = ItemTile<VEC>;
#pragma unroll
  for (int i = 0; i < T::RT; ++i) m[i] = -INFINITY, l[i] = 0.0f;
#pragma unroll
  for (int i = 0; i < T::RO; ++i)
#pragma unroll
    for (int j = 0; j < VEC; ++j)
#pragma unroll
      for (int k = 0; k < 4; ++k) acc[i][j][k] = 0.0f;
}

// Stores the loaded K and V float4s to sk and sv [C x KS].
template <int VEC>
__device__ __forceinline__ void item_store_kv(const float4 (&kr)[ItemTile<VEC>::PER], const float4 (&vr)[ItemTile<VEC>::PER], float* sk,
                                              float* sv, int tid) {
  using T = ItemTile<VEC>;
  constexpr int C = T::C, G = T::G, KS = T::KS;
#pragma unroll
  for (int u = 0; u < T::PER; ++u) {
    const int e = tid + u * T::NT, c = e / G, d = (e - c * G) * 4;
    if (e < C * G) {
      *reinterpret_cast<float4*>(&sk[c * KS + d]) = kr[u];
      *reinterpret_cast<float4*>(&sv[c * KS + d]) = vr[u];
    }
  }
}

// Scores of rows ty + 16 i x slots tx + 8 j.
template <int VEC>
__device__ __forceinline__ void item_scores(const float* sq, const float* sk, int tx, int ty, int rt_n,
                                            float (&sc)[ItemTile<VEC>::RT][ItemTile<VEC>::CT]) {
  using T = ItemTile<VEC>;
  constexpr int HDP = T::HDP, TX = T::TX, RT = T::RT, CT = T::CT, KS = T::KS;
#pragma unroll
  for (int i = 0; i < RT; ++i)
#pragma unroll
    for (int j = 0; j < CT; ++j) sc[i][j] = 0.0f;
#pragma unroll 4
  for (int d = 0; d < HDP; d += 4) {
    float4 kk[CT];
#pragma unroll
    for (int j = 0; j < CT; ++j) kk[j] = *reinterpret_cast<const float4*>(&sk[(tx + TX * j) * KS + d]);
#pragma unroll
    for (int i = 0; i < RT; ++i) {
      if (i >= rt_n) break;  // uniform: a small item skips its padding rows
      const float4 qq = *reinterpret_cast<const float4*>(&sq[(ty + T::TY * i) * KS + d]);
#pragma unroll
      for (int j = 0; j < CT; ++j)
        sc[i][j] = fmaf(qq.x, kk[j].x, fmaf(qq.y, kk[j].y, fmaf(qq.z, kk[j].z, fmaf(qq.w, kk[j].w, sc[i][j]))));
    }
  }
}

// Online softmax per row over the sub-tile (n slots): the row's slots are on
// TX neighbouring lanes. The weights go to sp [C x PS], each row's rescale of
// its old sums to scorr [R].
template <int VEC>
__device__ __forceinline__ void item_softmax(const float (&sc)[ItemTile<VEC>::RT][ItemTile<VEC>::CT], int32_t n, int tx, int ty, int rt_n,
                                             float (&m)[ItemTile<VEC>::RT], float (&l)[ItemTile<VEC>::RT], float* sp, float* scorr) {
  using T = ItemTile<VEC>;
  constexpr int TX = T::TX, RT = T::RT, CT = T::CT, PS = T::PS;
#pragma unroll
  for (int i = 0; i < RT; ++i) {
    if (i >= rt_n) break;
    float mx = -INFINITY;
#pragma unroll
    for (int j = 0; j < CT; ++j) mx = tx + TX * j < n ? fmaxf(mx, sc[i][j]) : mx;
#pragma unroll
    for (int off = TX / 2; off > 0; off >>= 1) mx = fmaxf(mx, __shfl_xor_sync(kFull, mx, off));
    const ta::Step st = ta::online_step(m[i], mx);  // the sub-tile as one step: corr rescales the old sums
    float sum = 0.0f;
#pragma unroll
    for (int j = 0; j < CT; ++j) {
      const float p = tx + TX * j < n ? expf(sc[i][j] - st.m_new) : 0.0f;
      sum += p;
      sp[(tx + TX * j) * PS + ty + T::TY * i] = p;
    }
#pragma unroll
    for (int off = TX / 2; off > 0; off >>= 1) sum += __shfl_xor_sync(kFull, sum, off);
    l[i] = l[i] * st.corr + sum;
    m[i] = st.m_new;
    if (tx == 0) scorr[ty + T::TY * i] = st.corr;
  }
}

// P.V of rows ty RO + i x dims tx 4 + 32 j: the old sums rescaled, then the
// sub-tile's weighted V rows added.
template <int VEC>
__device__ __forceinline__ void item_pv(const float* scorr, const float* sp, const float* sv, int tx, int ty,
                                        float (&acc)[ItemTile<VEC>::RO][VEC][4]) {
  using T = ItemTile<VEC>;
  constexpr int C = T::C, RO = T::RO, KS = T::KS, PS = T::PS;
  float cr[RO];
  load_rows<RO>(&scorr[ty * RO], cr);
#pragma unroll
  for (int i = 0; i < RO; ++i)
#pragma unroll
    for (int j = 0; j < VEC; ++j)
#pragma unroll
      for (int k = 0; k < 4; ++k) acc[i][j][k] *= cr[i];
#pragma unroll 4
  for (int c = 0; c < C; ++c) {
    float pr[RO];
    load_rows<RO>(&sp[c * PS + ty * RO], pr);
#pragma unroll
    for (int j = 0; j < VEC; ++j) {
      const float4 vv = *reinterpret_cast<const float4*>(&sv[c * KS + 32 * j + 4 * tx]);
#pragma unroll
      for (int i = 0; i < RO; ++i) {
        acc[i][j][0] = fmaf(pr[i], vv.x, acc[i][j][0]);
        acc[i][j][1] = fmaf(pr[i], vv.y, acc[i][j][1]);
        acc[i][j][2] = fmaf(pr[i], vv.z, acc[i][j][2]);
        acc[i][j][3] = fmaf(pr[i], vv.w, acc[i][j][3]);
      }
    }
  }
}

// The part row of (entry, head) of item row i.
__device__ __forceinline__ int64_t item_part_row(int64_t shared_base, int32_t heads, int32_t mlo, int32_t kvh, int32_t g, int i) {
  return shared_base + static_cast<int64_t>(mlo + i / g) * heads + kvh * g + i % g;
}

// Writes this thread's P.V rows (weighted V sums) to part_acc, as float4s
// where the rows are 16-byte aligned.
template <int VEC>
__device__ __forceinline__ void item_write_acc(const float (&acc)[ItemTile<VEC>::RO][VEC][4], float* part_acc, int64_t shared_base,
                                               int32_t heads, int32_t hd, int32_t mlo, int32_t kvh, int32_t g, int32_t rows, int tx,
                                               int ty) {
  constexpr int RO = ItemTile<VEC>::RO;
#pragma unroll
  for (int i = 0; i < RO; ++i) {
    const int ri = ty * RO + i;
    if (ri >= rows) continue;
    const int64_t pr = item_part_row(shared_base, heads, mlo, kvh, g, ri);
#pragma unroll
    for (int j = 0; j < VEC; ++j) {
      float* dst = part_acc + pr * hd + 32 * j + 4 * tx;
      if (hd % 4 == 0 && (reinterpret_cast<uintptr_t>(part_acc) & 15) == 0 && 32 * j + 4 * tx < hd) {  // 16-byte aligned rows
        *reinterpret_cast<float4*>(dst) = make_float4(acc[i][j][0], acc[i][j][1], acc[i][j][2], acc[i][j][3]);
      } else {
#pragma unroll
        for (int k = 0; k < 4; ++k)
          if (32 * j + 4 * tx + k < hd) dst[k] = acc[i][j][k];
      }
    }
  }
}

// Writes each score row's running max and sum to part_ml (lane tx = 0 of the row).
template <int VEC>
__device__ __forceinline__ void item_write_ml(const float (&m)[ItemTile<VEC>::RT], const float (&l)[ItemTile<VEC>::RT], float* part_ml,
                                              int64_t shared_base, int32_t heads, int32_t mlo, int32_t kvh, int32_t g, int32_t rows, int tx,
                                              int ty) {
  using T = ItemTile<VEC>;
#pragma unroll
  for (int i = 0; i < T::RT; ++i) {
    const int ri = ty + T::TY * i;
    if (tx != 0 || ri >= rows) continue;
    const int64_t pr = item_part_row(shared_base, heads, mlo, kvh, g, ri);
    part_ml[pr * 2] = m[i];
    part_ml[pr * 2 + 1] = l[i];
  }
}

template <int VEC>
__global__ void __launch_bounds__(kWarps * 32)
    tree_attention_item_kernel(TreeAttentionArgs a, float* part_acc, float* part_ml, int64_t shared_base) {
  using T = ItemTile<VEC>;
  constexpr int R = T::R, C = T::C, RT = T::RT, CT = T::CT, RO = T::RO, KS = T::KS, PS = T::PS;
  constexpr int NT = T::NT, G = T::G, PER = T::PER;
  __shared__ __align__(16) float sq[R * KS];  // [R x KS] scaled queries of the item's rows
  __shared__ __align__(16) float sk[C * KS];  // [C x KS] K of the sub-tile's slots
  __shared__ __align__(16) float sv[C * KS];  // [C x KS] V of the sub-tile's slots
  __shared__ __align__(16) float sp[C * PS];  // [C x PS] softmax weights of the sub-tile (slot-major)
  __shared__ __align__(16) float scorr[R];    // [R] rescale of each row's sums at this sub-tile
  const int tid = threadIdx.x, tx = tid % T::TX, ty = tid / T::TX;
  const int32_t* it = a.cascade.item + 4 * static_cast<int64_t>(blockIdx.x);
  const int32_t slo = it[0], shi = it[1], mlo = it[2], mhi = it[3];
  const int32_t kvh = blockIdx.y, g = a.heads / a.kv_heads, hd = a.head_dim;
  const int32_t rows = (mhi - mlo) * g;  // row i: member entry mlo + i / g, query head kvh * g + i % g
  const int64_t row = static_cast<int64_t>(a.kv_heads) * hd;
  const float* K = a.kv + static_cast<int64_t>(kvh) * hd;
  const float* V = a.kv + static_cast<int64_t>(a.capacity) * row + static_cast<int64_t>(kvh) * hd;
  // float4 loads need 16-byte aligned rows: hd % 4 == 0 and an aligned base.
  const bool vec4 = hd % 4 == 0 && (reinterpret_cast<uintptr_t>(a.kv) & 15) == 0;
  item_stage_queries<VEC>(a, sq, tid, mlo, kvh, g, hd, rows);
  const int rt_n = (rows + T::TY - 1) / T::TY;  // score rows i < rt_n hold a query head somewhere (uniform)
  float m[RT], l[RT], acc[RO][VEC][4];
  item_state_init<VEC>(m, l, acc);
  const bool pv_rows = ty * RO < rows;  // this thread's P.V rows hold a query head
  // Stage K and V of a sub-tile: every thread issues all its float4 loads
  // before it stores any. (Loading the next sub-tile during this one's
  // scores measured no faster on an H200: it costs registers, 3-4 blocks per
  // SM instead of 5, and the kernel is bound by instruction issue.) The loads
  // stay in the kernel body: moved into a helper, ptxas lays out the float4
  // and scalar paths the other way round and takes 11 more registers at
  // VEC = 2 (96 -> 107: 4 blocks per SM instead of 5) and 4 more at VEC = 8.
  for (int32_t t0 = slo; t0 < shi; t0 += C) {
    const int32_t n = shi - t0 < C ? shi - t0 : C;
    float4 kr[PER], vr[PER];
#pragma unroll
    for (int u = 0; u < PER; ++u) {
      const int e = tid + u * NT, c = e / G, d = (e - c * G) * 4;
      kr[u] = vr[u] = make_float4(0.0f, 0.0f, 0.0f, 0.0f);
      if (e < C * G && c < n && d < hd) {
        const int32_t s = a.cascade.shared_slots[t0 + c];
        if (s >= 0 && s < a.capacity) {
          const float* kp = K + static_cast<int64_t>(s) * row + d;
          const float* vp = V + static_cast<int64_t>(s) * row + d;
          if (vec4) {
            kr[u] = __ldg(reinterpret_cast<const float4*>(kp));
            vr[u] = __ldg(reinterpret_cast<const float4*>(vp));
          } else {
            float kx[4] = {0.0f, 0.0f, 0.0f, 0.0f}, vx[4] = {0.0f, 0.0f, 0.0f, 0.0f};
            for (int k = 0; k < 4 && d + k < hd; ++k) kx[k] = __ldg(kp + k), vx[k] = __ldg(vp + k);
            kr[u] = make_float4(kx[0], kx[1], kx[2], kx[3]);
            vr[u] = make_float4(vx[0], vx[1], vx[2], vx[3]);
          }
        } else if (d == 0) {
          detail::status_report(reinterpret_cast<KernelStatus*>(a.status), KernelError::slot_out_of_range, a.cascade.member[mlo], s);
        }
      }
    }
    __syncthreads();  // sq written (first round); the last round's K, V, weights and corr read
    item_store_kv<VEC>(kr, vr, sk, sv, tid);
    __syncthreads();
    float sc[RT][CT];
    item_scores<VEC>(sq, sk, tx, ty, rt_n, sc);
    item_softmax<VEC>(sc, n, tx, ty, rt_n, m, l, sp, scorr);
    __syncthreads();
    if (pv_rows) item_pv<VEC>(scorr, sp, sv, tx, ty, acc);
  }
  item_write_acc<VEC>(acc, part_acc, shared_base, a.heads, hd, mlo, kvh, g, rows, tx, ty);
  item_write_ml<VEC>(m, l, part_ml, shared_base, a.heads, mlo, kvh, g, rows, tx, ty);
}

// Merge pass (FlashInfer merge_state): a block per (query, head) rescales
// each partial state (its splits, then under a cascade its items' entries)
// to the common max and normalises once. The parts are taken kMergeBatch at
// a time: each thread finds one part's row and weight (into shared memory),
// then the block's threads, as `groups` groups of `width` threads over the
// dims, sum every groups-th part of the batch with independent loads in
// flight; the groups' sums are added through shared memory at the end.
constexpr int kMergeThreads = 128, kMergeBatch = 128;
__global__ void __launch_bounds__(kMergeThreads)
    tree_attention_merge_kernel(TreeAttentionArgs a, int32_t splits, const float* part_acc, const float* part_ml, int64_t shared_base) {
  constexpr int U = (256 + kMergeThreads - 1) / kMergeThreads;  // dims per thread (head_dim <= 256)
  __shared__ int64_t srow[kMergeBatch];  // [batch] part row of each part
  __shared__ float sf[kMergeBatch];      // [batch] its weight under the common max
  __shared__ float sred[kMergeThreads / 32];
  __shared__ float sacc[kMergeThreads * U];  // [kMergeThreads x U] each thread's sums, then added per dim
  __shared__ float sl[kMergeThreads];        // [kMergeThreads] each thread's sum of weights
  const int64_t oh = blockIdx.x;
  const int32_t hd = a.head_dim;
  const int32_t r = static_cast<int32_t>(oh / a.heads), h = static_cast<int32_t>(oh % a.heads);
  const int32_t c0 = a.cascade.items > 0 ? a.cascade.query_part_ptr[r] : 0;
  const int32_t c1 = a.cascade.items > 0 ? a.cascade.query_part_ptr[r + 1] : 0;
  auto part = [&](int32_t k) {  // part row of the query's k-th partial state
    return k < splits ? oh * splits + k : shared_base + static_cast<int64_t>(a.cascade.query_parts[c0 + k - splits]) * a.heads + h;
  };
  const int32_t parts = splits + c1 - c0;
  const int tid = static_cast<int>(threadIdx.x), lane = tid & 31, warp = tid >> 5;
  // width: dims covered by one pass of a group (head_dim rounded up to a warp, at most the block).
  const int width = hd >= kMergeThreads ? kMergeThreads : (hd + 31) / 32 * 32;
  const int groups = kMergeThreads / width, grp = tid / width, col = tid - grp * width;
  float M = -INFINITY;
  for (int32_t k = tid; k < parts; k += kMergeThreads) M = fmaxf(M, part_ml[part(k) * 2]);
#pragma unroll
  for (int off = 16; off > 0; off >>= 1) M = fmaxf(M, __shfl_xor_sync(kFull, M, off));
  if (lane == 0) sred[warp] = M;
  __syncthreads();
#pragma unroll
  for (int w = 0; w < kMergeThreads / 32; ++w) M = fmaxf(M, sred[w]);
  float L = 0.0f, A[U] = {};  // dims col + width u
  for (int32_t k0 = 0; k0 < parts; k0 += kMergeBatch) {
    const int32_t nb = parts - k0 < kMergeBatch ? parts - k0 : kMergeBatch;
    __syncthreads();  // the last batch read
    if (tid < nb) {
      const int64_t ps = part(k0 + tid);
      srow[tid] = ps;
      sf[tid] = ta::merge_factor(part_ml[ps * 2], M);
    }
    __syncthreads();
    if (grp < groups) {
      constexpr int Q = 8;  // parts whose loads are issued together
      for (int32_t k = grp; k < nb; k += groups * Q) {
        float lv[Q], av[Q][U], fv[Q];
#pragma unroll
        for (int q = 0; q < Q; ++q) {
          const int32_t kk = k + groups * q;
          const bool ok = kk < nb;
          const int64_t ps = ok ? srow[kk] : 0;
          fv[q] = ok ? sf[kk] : 0.0f;
          lv[q] = ok ? part_ml[ps * 2 + 1] : 0.0f;
#pragma unroll
          for (int u = 0; u < U; ++u) {
            const int32_t d = col + width * u;
            av[q][u] = ok && d < hd ? part_acc[ps * hd + d] : 0.0f;
          }
        }
#pragma unroll
        for (int q = 0; q < Q; ++q) {
          L = fmaf(lv[q], fv[q], L);
#pragma unroll
          for (int u = 0; u < U; ++u) A[u] = fmaf(av[q][u], fv[q], A[u]);
        }
      }
    }
  }
#pragma unroll
  for (int u = 0; u < U; ++u) sacc[u * kMergeThreads + tid] = A[u];
  sl[tid] = L;
  __syncthreads();
  if (grp == 0) {
    float Lt = 0.0f;
    for (int gi = 0; gi < groups; ++gi) Lt += sl[gi * width];  // every thread of a group holds its group's L
#pragma unroll
    for (int u = 0; u < U; ++u) {
      const int32_t d = col + width * u;
      if (d >= hd) continue;
      float At = 0.0f;
      for (int gi = 0; gi < groups; ++gi) At += sacc[u * kMergeThreads + gi * width + col];
      a.out[oh * hd + d] = ta::finish(At, Lt);
    }
  }
}

int32_t pow2_at_least(int32_t x) {
  int32_t p = 1;
  while (p < x) p *= 2;
  return p;
}

size_t align256(size_t x) { return (x + 255) / 256 * 256; }

template <int VEC, int HG>
void launch_vh(const TreeAttentionArgs& a, const TreeAttentionPlan& p, float* part_acc, float* part_ml, cudaStream_t st) {
  const dim3 grid(static_cast<unsigned>(a.num_queries), static_cast<unsigned>(a.kv_heads * p.head_groups),
                  static_cast<unsigned>(p.splits));
  tree_attention_kernel<VEC, HG><<<grid, kWarps * 32, 0, st>>>(a, p, part_acc, part_ml);
  TS_CUDA_CHECK_LAUNCH("tree_attention_kernel");
}

template <int VEC>
void launch_v(const TreeAttentionArgs& a, const TreeAttentionPlan& p, float* part_acc, float* part_ml, cudaStream_t st) {
  if (p.heads_per_block == 1) launch_vh<VEC, 1>(a, p, part_acc, part_ml, st);
  else if (p.heads_per_block == 2) launch_vh<VEC, 2>(a, p, part_acc, part_ml, st);
  else if (p.heads_per_block == 4) launch_vh<VEC, 4>(a, p, part_acc, part_ml, st);
  else if constexpr (VEC < 8) launch_vh<VEC, 8>(a, p, part_acc, part_ml, st);
  else TS_FAIL("tree_attention (cuda): no kernel for " << p.heads_per_block << " heads per block at vec " << VEC);
}

int32_t current_sm_count() {
  int dev = 0, n = 0;
  TS_CUDA_CHECK(cudaGetDevice(&dev), "tree_attention: cudaGetDevice");
  TS_CUDA_CHECK(cudaDeviceGetAttribute(&n, cudaDevAttrMultiProcessorCount, dev), "tree_attention: SM count");
  return n;
}

}  // namespace

TreeAttentionPlan tree_attention_plan(const TreeAttentionArgs& a, int32_t sm_count) {
  TS_CHECK(a.heads > 0 && a.kv_heads > 0 && a.heads % a.kv_heads == 0,
           "tree_attention (cuda): heads = " << a.heads << " must be a positive multiple of kv_heads = " << a.kv_heads);
  TS_CHECK(a.head_dim > 0 && a.head_dim <= 256, "tree_attention (cuda): head_dim = " << a.head_dim << " outside [1, 256]");
  TS_CHECK(a.num_queries >= 0 && a.max_row >= 0, "tree_attention (cuda): negative num_queries or max_row");
  TreeAttentionPlan p;
  p.vec = a.head_dim <= 32 ? 1 : a.head_dim <= 64 ? 2 : a.head_dim <= 128 ? 4 : 8;
  const int32_t group = a.heads / a.kv_heads;
  p.heads_per_block = std::min(pow2_at_least(group), p.vec == 8 ? 4 : 8);  // vec 8 x 8 heads would spill registers
  p.head_groups = (group + p.heads_per_block - 1) / p.heads_per_block;
  TS_CHECK(int64_t{a.kv_heads} * p.head_groups <= 65535, "tree_attention (cuda): too many KV heads x head groups for gridDim.y");
  // Under a cascade the per-query blocks read the private lists only.
  const TreeAttentionCascade& c = a.cascade;
  const int32_t max_row = c.items > 0 ? c.private_max_row : a.max_row;
  if (c.items > 0) {
    const int32_t rows = p.vec == 1 ? ItemTile<1>::R : p.vec == 2 ? ItemTile<2>::R : p.vec == 4 ? ItemTile<4>::R : ItemTile<8>::R;
    TS_CHECK(c.tile_rows > 0 && c.tile_rows <= rows && group <= c.tile_rows && c.members > 0 && c.private_max_row >= 0,
             "tree_attention (cuda): a cascade of tile_rows = " << c.tile_rows << " (members " << c.members << ") for a kernel tile of "
                                                                << rows << " rows and " << group << " heads per KV head");
    p.items = c.items;
  }
  const int64_t base = std::max<int64_t>(1, int64_t{a.num_queries} * a.kv_heads * p.head_groups);
  const int64_t want = (4 * int64_t{std::max(sm_count, 1)} + base - 1) / base;   // ~4 waves
  // Chunks of >= 64 entries; under a cascade the private lists are short
  // (a beam's own tokens) and few blocks read them, so >= 16 entries (4 per
  // warp) to put more blocks in flight beside the items.
  const int64_t most = std::max<int64_t>(1, int64_t{max_row} / (c.items > 0 ? 16 : 64));
  const int64_t splits = std::min<int64_t>(std::min(want, most), int64_t{65535});
  p.chunk = static_cast<int32_t>(std::max<int64_t>(1, (int64_t{max_row} + splits - 1) / splits));
  p.splits = static_cast<int32_t>(std::max<int64_t>(1, (int64_t{max_row} + p.chunk - 1) / p.chunk));  // no empty tail split
  p.partials = p.splits > 1 || p.items > 0 ? 1 : 0;
  return p;
}

namespace {
// Partial states in the workspace: [q x heads x splits] of the per-query
// blocks (when they write partials), then [members x heads] of the items.
int64_t partial_rows(const TreeAttentionPlan& p, const TreeAttentionArgs& a) {
  if (!p.partials) return 0;
  return int64_t{a.num_queries} * a.heads * p.splits + (p.items > 0 ? int64_t{a.cascade.members} * a.heads : 0);
}
}  // namespace

size_t tree_attention_workspace_bytes(const TreeAttentionPlan& p, const TreeAttentionArgs& a) {
  const size_t parts = static_cast<size_t>(partial_rows(p, a));
  if (parts == 0) return 0;
  return align256(parts * static_cast<size_t>(a.head_dim) * sizeof(float)) + parts * 2 * sizeof(float);
}

size_t tree_attention_workspace_bytes(const TreeAttentionArgs& a) {
  return tree_attention_workspace_bytes(tree_attention_plan(a, current_sm_count()), a);
}

double tree_attention_kv_bytes(const TreeAttentionArgs& a, const TreeAttentionPlan& p, int64_t listed) {
  const double row = 2.0 * a.head_dim * sizeof(float);  // K and V of one slot and KV head
  const int64_t per_query = p.items > 0 ? a.cascade.private_entries : listed;
  return row * a.kv_heads * (static_cast<double>(per_query) * p.head_groups + static_cast<double>(p.items > 0 ? a.cascade.item_slot_reads : 0));
}

void tree_attention(const TreeAttentionArgs& a) {
  if (a.num_queries == 0) return;
  const TreeAttentionPlan p = tree_attention_plan(a, current_sm_count());
  TS_CHECK(a.q && a.kv && a.indptr && a.out, "tree_attention (cuda): null q, kv, indptr or out");
  TS_CHECK(a.slot_ids || a.max_row == 0, "tree_attention (cuda): null slot_ids");
  const TreeAttentionCascade& c = a.cascade;
  TS_CHECK(p.items == 0 || (c.item && c.shared_slots && c.member && c.query_part_ptr && c.query_parts && c.private_ptr && c.private_slots),
           "tree_attention (cuda): a cascade of " << c.items << " items with a null array");
  const size_t need = tree_attention_workspace_bytes(p, a);
  TS_CHECK(a.workspace_bytes >= need && (need == 0 || a.workspace),
           "tree_attention (cuda): workspace of " << a.workspace_bytes << " bytes, the plan needs " << need);
  float* part_acc = nullptr;
  float* part_ml = nullptr;
  const int64_t rows = partial_rows(p, a), shared_base = int64_t{a.num_queries} * a.heads * p.splits;
  if (rows > 0) {
    part_acc = static_cast<float*>(a.workspace);
    part_ml = reinterpret_cast<float*>(static_cast<char*>(a.workspace) + align256(static_cast<size_t>(rows) * a.head_dim * sizeof(float)));
  }
  TreeAttentionArgs ap = a;  // the per-query blocks: under a cascade, the private lists
  if (p.items > 0) {
    ap.indptr = c.private_ptr;
    ap.slot_ids = c.private_slots;
    ap.max_row = c.private_max_row;
  }
  const auto st = static_cast<cudaStream_t>(a.stream);
  switch (p.vec) {
    case 1: launch_v<1>(ap, p, part_acc, part_ml, st); break;
    case 2: launch_v<2>(ap, p, part_acc, part_ml, st); break;
    case 4: launch_v<4>(ap, p, part_acc, part_ml, st); break;
    default: launch_v<8>(ap, p, part_acc, part_ml, st); break;
  }
  if (p.items > 0) {
    const dim3 grid(static_cast<unsigned>(p.items), static_cast<unsigned>(a.kv_heads));
    switch (p.vec) {
      case 1: tree_attention_item_kernel<1><<<grid, kWarps * 32, 0, st>>>(a, part_acc, part_ml, shared_base); break;
      case 2: tree_attention_item_kernel<2><<<grid, kWarps * 32, 0, st>>>(a, part_acc, part_ml, shared_base); break;
      case 4: tree_attention_item_kernel<4><<<grid, kWarps * 32, 0, st>>>(a, part_acc, part_ml, shared_base); break;
      default: tree_attention_item_kernel<8><<<grid, kWarps * 32, 0, st>>>(a, part_acc, part_ml, shared_base); break;
    }
    TS_CUDA_CHECK_LAUNCH("tree_attention_item_kernel");
  }
  if (p.partials) {
    tree_attention_merge_kernel<<<static_cast<unsigned>(int64_t{a.num_queries} * a.heads), kMergeThreads, 0, st>>>(a, p.splits, part_acc, part_ml,
                                                                                                        shared_base);
    TS_CUDA_CHECK_LAUNCH("tree_attention_merge_kernel");
  }
}

namespace {
size_t hook_workspace(const TreeAttentionArgs& a) { return tree_attention_workspace_bytes(a); }
void hook_launch(const TreeAttentionArgs& a) { tree_attention(a); }
// Host memory: the caller reads the output buffers right after this call
// (LibTorch CPU tensors), so the launch waits for the kernel.
void hook_launch_and_wait(const TreeAttentionArgs& a) {
  tree_attention(a);
  TS_CUDA_CHECK(counted_stream_sync(static_cast<cudaStream_t>(a.stream)), "tree_attention: synchronise (host memory)");
}
const char* hook_error(int32_t code) { return kernel_error_name(static_cast<KernelError>(code)); }
}  // namespace

void tree_attention_register(TreeAttentionMemory memory) {
  TreeAttentionKernel k;
  k.name = "cuda::tree_attention";
  k.host_memory = memory == TreeAttentionMemory::host;
  k.workspace_bytes = hook_workspace;
  k.launch = k.host_memory ? hook_launch_and_wait : hook_launch;
  k.error_name = hook_error;
  tree_attention_kernel_register(k);
}

}  // namespace triescope::cuda
