// The AMX kernel sets (compiled with the AVX-512 flags and, where the compiler has them,
// -mamx-tile -mamx-int8): the avx512 set with the Q8_0 and Q4_0 gemms of kAmxMinTok tokens or
// more taken over by amx_gemm.h. "amx" runs the real tile instructions (only after
// kernel_set.cpp's CPUID, XCR0 and arch_prctl checks and amx_tiles_self_check below); "amx-emu"
// runs the same kernel over the scalar tile emulator (tests, and `--kernels amx-emu` to run a
// whole model through the AMX code path on a CPU without AMX).
#include <cstring>
#include <string>
#include <type_traits>
#include <vector>

#include "base/error.h"
#include "base/fp16.h"
#include "kernels/kernel_set.h"
#include "kernels/x86/amx_gemm.h"

namespace tzero {

namespace {

// B8: the rows in the Blocks8 layout (kernels/weight_layout.h).
template <typename Tiles, typename Block, bool B8 = false>
void gemm_q_amx(const uint8_t* w, size_t w_row_bytes, const void* x, size_t n_cols, size_t n_rows,
                size_t n_tok, float* y, size_t ldy) {
  if (n_tok >= x86::kAmxMinTok && n_cols >= size_t(kQBlock)) {
    x86::gemm_q_amx_tiles<Tiles, Block, B8>(w, w_row_bytes, x, n_cols, n_rows, n_tok, y, ldy);
    return;
  }
  const KernelSet& v = avx512_kernels();  // decode and small batches: the VNNI kernels
  const TensorType t = sizeof(Block) == sizeof(BlockQ4_0) ? TensorType::Q4_0 : TensorType::Q8_0;
  (B8 ? v.gemm_blocks8_for(t) : v.gemm_for(t))(w, w_row_bytes, x, n_cols, n_rows, n_tok, y, ldy);
}

template <typename Tiles>
KernelSet make_amx(const char* name) {
  KernelSet set = avx512_kernels();
  set.name = name;
  set.gemm_q8_0 = gemm_q_amx<Tiles, BlockQ8_0>;
  set.gemm_q4_0 = gemm_q_amx<Tiles, BlockQ4_0>;
  set.blocks8_q8_0 = gemm_q_amx<Tiles, BlockQ8_0, true>;
  set.blocks8_q4_0 = gemm_q_amx<Tiles, BlockQ4_0, true>;
  return set;
}

// An emulator with a wrong TDPBSSD (one product of the last row dropped): the self-check must
// refuse it (amx_self_check_emulated(true, ...)).
struct AmxEmuBroken : x86::AmxEmu {
  template <int C, int A, int B>
  static void dpbssd() {
    x86::AmxEmu::dpbssd<C, A, B>();
    x86::AmxEmuState& s = state();
    const int m = s.rows[C] - 1;
    int32_t v;
    std::memcpy(&v, s.tile[C][m], 4);
    v -= int32_t(int8_t(s.tile[A][m][0])) * int32_t(int8_t(s.tile[B][0][0]));
    std::memcpy(s.tile[C][m], &v, 4);
  }
};

uint32_t next(uint64_t& s) {  // SplitMix-style generator: fixed data, no dependencies
  s += 0x9e3779b97f4a7c15ull;
  uint64_t z = s;
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return uint32_t((z ^ (z >> 31)) >> 32);
}

// One gemm of 33 rows x 33 tokens x 9 blocks (two A and two B tiles, tails of 1 row and 1
// token, a block past the first group of 8) for each weight type, random quants with the
// extremes (-128, d = 0) planted, against the scalar reference's bits.
template <typename Tiles>
bool self_check(std::string* why) {
  constexpr size_t kRows = 33, kTok = 33, kNb = 9, kCols = kNb * kQBlock;
  uint64_t seed = 0x746a65726f414d58ull;
  std::vector<ActQ8> x(kTok * kNb);
  for (size_t i = 0; i < x.size(); ++i) {
    x[i].d = float(int(next(seed) % 2001) - 1000) * 1e-4f;
    for (int8_t& q : x[i].qs) q = int8_t(next(seed));
  }
  for (int8_t& q : x[0].qs) q = -128;
  x[kNb + 3].d = 0.0f;
  auto run = [&](auto block_tag, GemmFn ref, const char* type) {
    using Block = decltype(block_tag);
    std::vector<Block> w(kRows * kNb);
    using Q = std::remove_reference_t<decltype(w[0].qs[0])>;
    for (size_t i = 0; i < w.size(); ++i) {
      w[i].d = float_to_fp16(float(int(next(seed) % 2001) - 1000) * 1e-3f);
      for (Q& q : w[i].qs) q = Q(next(seed));
    }
    const bool q4 = sizeof(Block) == sizeof(BlockQ4_0);
    for (Q& q : w[0].qs) q = Q(q4 ? 0x00 : 0x80);  // the most negative quant: -8, -128
    w[2 * kNb + 5].d = 0;
    std::vector<float> got(kTok * kRows, -1.0f), want(kTok * kRows);
    const uint8_t* wp = reinterpret_cast<const uint8_t*>(w.data());
    ref(wp, kNb * sizeof(Block), x.data(), kCols, kRows, kTok, want.data(), kRows);
    x86::gemm_q_amx_tiles<Tiles, Block>(wp, kNb * sizeof(Block), x.data(), kCols, kRows, kTok,
                                        got.data(), kRows);
    for (size_t i = 0; i < got.size(); ++i)
      if (std::memcmp(&got[i], &want[i], sizeof(float)) != 0) {
        if (why)
          *why = std::string("the self-check gemm (") + type + ", 33 rows x 33 tokens x 9 " +
                 "blocks) on the tiles differs from the scalar reference at token " +
                 std::to_string(i / kRows) + ", row " + std::to_string(i % kRows);
        return false;
      }
    return true;
  };
  return run(BlockQ8_0{}, scalar_kernels().gemm_q8_0, "Q8_0") &&
         run(BlockQ4_0{}, scalar_kernels().gemm_q4_0, "Q4_0");
}

}  // namespace

const KernelSet& amx_emulated_kernels() {
  static const KernelSet set = make_amx<x86::AmxEmu>("amx-emu");
  return set;
}

bool amx_self_check_emulated(bool broken, std::string* why) {
  return broken ? self_check<AmxEmuBroken>(why) : self_check<x86::AmxEmu>(why);
}

GemmFn amx_emulated_tile_gemm(TensorType t) {
  if (t == TensorType::Q8_0) return x86::gemm_q_amx_tiles<x86::AmxEmu, BlockQ8_0>;
  if (t == TensorType::Q4_0) return x86::gemm_q_amx_tiles<x86::AmxEmu, BlockQ4_0>;
  return nullptr;
}

#ifdef TZ_AMX_INTRINSICS
bool amx_built() {
  return true;
}
const KernelSet& amx_kernels() {
  static const KernelSet set = make_amx<x86::AmxHw>("amx");
  return set;
}
bool amx_tiles_self_check(std::string* why) {
  return self_check<x86::AmxHw>(why);
}
#else
bool amx_built() {
  return false;
}
const KernelSet& amx_kernels() {  // never offered: amx_built() is false
  throw Error("--kernels amx: this build's compiler has no AMX intrinsics");
}
bool amx_tiles_self_check(std::string* why) {
  if (why) *why = "this build's compiler has no AMX intrinsics (-mamx-tile -mamx-int8)";
  return false;
}
#endif

}  // namespace tzero
