// The AMX kernels (kernels/x86/amx*.{h,cpp}). On a CPU without AMX the real tile instructions
// cannot run, so the kernel is tested over the scalar tile emulator (the same template, packing,
// tile shapes and float part; only the instructions are substituted), and the emulator itself is
// tested against the TDPBSSD definition and the ISA's shape rules. The real tiles are tested
// where the CPU has them (skipped with a message otherwise). Bits are compared with memcmp.
//
// AmxEmulator.*  the emulator: TDPBSSD, loads, stores and zeroing as the SDM defines them; every
//                shape rule the hardware enforces with #UD aborts (death tests).
// AmxKernels.*   emulated (and, where present, real) AMX gemms equal the scalar reference's
//                bits for Q8_0 and Q4_0 over token, row and block counts around the tile
//                sizes, extreme quants, threads; the self-check accepts the emulator and
//                refuses a wrong TDPBSSD; the selection (--kernels amx / amx-emu / auto).
#include <gtest/gtest.h>

#include <csignal>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "base/error.h"
#include "base/fp16.h"
#include "base/thread_pool.h"
#include "kernels/kernel_set.h"
#include "kernels/matmul.h"
#include "kernels/quant.h"
#include "kernels/x86/amx_tiles.h"
#include "support/test_support.h"

namespace {

using tzero::GemmFn;
using tzero::KernelSet;
using tzero::TensorType;
using tzero::x86::AmxEmu;
using tzero::x86::AmxTileConfig;

// ---- the emulator --------------------------------------------------------------------------

AmxTileConfig config(const int (&rows)[8], const int (&colsb)[8]) {
  AmxTileConfig c{};
  c.palette_id = 1;
  for (int t = 0; t < 8; ++t) {
    c.rows[t] = uint8_t(rows[t]);
    c.colsb[t] = uint16_t(colsb[t]);
  }
  return c;
}

// C (M x N int32) += A (M x 4K bytes) . B (K x 4N bytes), loaded with strides wider than a row,
// against the definition, for shapes up to the limits (16 rows, 64 bytes, K = 16).
TEST(AmxEmulator, TdpbssdMatchesDefinition) {
  std::mt19937 rng(7);
  for (int M : {1, 3, 16})
    for (int N : {1, 5, 16})
      for (int K : {1, 8, 16}) {
        const AmxTileConfig c =
            config({M, 0, 0, 0, M, 0, K, 0}, {4 * N, 0, 0, 0, 4 * K, 0, 4 * N, 0});
        AmxEmu::configure(c);
        const size_t sa = 4 * K + 3, sb = 4 * N + 5, sc = 4 * N + 4;  // strides
        std::vector<int8_t> a(M * sa), b(K * sb);
        std::vector<int32_t> c0(M * sc / 4), out(M * sc / 4, 12345);
        for (auto& v : a) v = int8_t(rng());
        for (auto& v : b) v = int8_t(rng());
        for (auto& v : c0) v = int32_t(rng());
        a[0] = b[0] = -128;  // the extremes multiply exactly
        AmxEmu::load<0>(c0.data(), sc);
        AmxEmu::load<4>(a.data(), sa);
        AmxEmu::load<6>(b.data(), sb);
        AmxEmu::dpbssd<0, 4, 6>();
        AmxEmu::store<0>(out.data(), sc);
        for (int m = 0; m < M; ++m)
          for (int n = 0; n < N; ++n) {
            uint32_t want = uint32_t(c0[m * sc / 4 + n]);  // wraps modulo 2^32, as DPBD
            for (int k = 0; k < K; ++k)
              for (int i = 0; i < 4; ++i)
                want += uint32_t(int32_t(a[m * sa + 4 * k + i]) * int32_t(b[k * sb + 4 * n + i]));
            ASSERT_EQ(uint32_t(out[m * sc / 4 + n]), want) << M << "x" << N << "x" << K;
          }
        // The store writes rows x colsb bytes only: the stride's extra dword keeps its value.
        EXPECT_EQ(out[N], 12345);
        AmxEmu::release();
      }
}

// A load fills colsb bytes of each configured row and zeroes the rest of the tile (what a wider
// dpbssd would then see); a zeroed tile stores zeros.
TEST(AmxEmulator, LoadZeroesTheRestOfTheTile) {
  AmxEmu::configure(config({2, 0, 0, 0, 0, 0, 0, 0}, {8, 0, 0, 0, 0, 0, 0, 0}));
  std::vector<uint8_t> src(64, 0xab);
  AmxEmu::load<0>(src.data(), 32);
  const auto& s = AmxEmu::state();
  for (int r = 0; r < 16; ++r)
    for (int b = 0; b < 64; ++b)
      ASSERT_EQ(s.tile[0][r][b], r < 2 && b < 8 ? 0xab : 0) << r << " " << b;
  AmxEmu::zero<0>();
  uint8_t out[16];
  std::memset(out, 1, sizeof(out));
  AmxEmu::store<0>(out, 8);
  for (uint8_t v : out) EXPECT_EQ(v, 0);
  AmxEmu::release();
}

void dpbssd_046() {
  AmxEmu::dpbssd<0, 4, 6>();
}

// Every #UD the kernels could trigger on the hardware aborts in the emulator with the rule.
TEST(AmxEmulatorDeathTest, ShapeAndConfigurationViolationsFault) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  static const int r16[8] = {16, 16, 16, 16, 16, 16, 8, 8},
                   cb[8] = {64, 64, 64, 64, 32, 32, 64, 64};
  static const int r17[8] = {17}, c64[8] = {64}, r1[8] = {16}, c65[8] = {65}, c0[8] = {};
  static const int b7[8] = {16, 16, 16, 16, 16, 16, 7, 8};         // B has 7 rows, A has K = 8
  static const int cnarrow[8] = {60, 64, 64, 64, 32, 32, 64, 64};  // C narrower than B
  static const int cshort[8] = {15, 16, 16, 16, 16, 16, 8, 8};     // C shorter than A
  auto dp_with = [](const int(&rows)[8], const int(&colsb)[8]) {
    AmxEmu::configure(config(rows, colsb));
    dpbssd_046();
  };
  auto after_release = [] {
    AmxEmu::configure(config(r16, cb));
    AmxEmu::release();
    dpbssd_046();
  };
  auto reserved = [] {
    AmxTileConfig c = config(r16, cb);
    c.reserved[3] = 1;
    AmxEmu::configure(c);
  };
  EXPECT_DEATH(AmxEmu::zero<0>(), "TILEZERO: tile not configured");
  EXPECT_DEATH(dpbssd_046(), "TDPBSSD: tile not configured");
  EXPECT_DEATH(after_release(), "TDPBSSD: tile not configured");
  EXPECT_DEATH(AmxEmu::configure(config(r17, c64)), "more than 16 rows");
  EXPECT_DEATH(AmxEmu::configure(config(r1, c65)), "more than 64 bytes");
  EXPECT_DEATH(AmxEmu::configure(config(r1, c0)), "rows xor colsb");
  EXPECT_DEATH(reserved(), "reserved bytes");
  EXPECT_DEATH(dp_with(b7, cb), "colsb\\[src1\\] / 4 != rows\\[src2\\]");
  EXPECT_DEATH(dp_with(r16, cnarrow), "colsb\\[dst\\] != colsb\\[src2\\]");
  EXPECT_DEATH(dp_with(cshort, cb), "rows\\[dst\\] != rows\\[src1\\]");
}

// ---- the kernels ---------------------------------------------------------------------------

bool runs(const std::string& name) {
  try {
    tzero::select_kernels(name);
    return true;
  } catch (const tzero::Error&) {
    return false;
  }
}

size_t block_bytes(TensorType t) {
  return t == TensorType::Q8_0 ? sizeof(tzero::BlockQ8_0) : sizeof(tzero::BlockQ4_0);
}

// Random raw blocks (quants of the whole range, -128 included; f16 scales about 2^-7 .. 2^4)
// for N rows of nb blocks and T activation rows, with extremes planted by `extreme`:
// 1 = every quant at its most negative value (Q8_0 -128 x -128: the largest sums, 524288),
// 2 = d = 0 in some weight and activation blocks, 3 = both.
struct Operands {
  std::vector<uint8_t> w;
  std::vector<tzero::ActQ8> x;
};
Operands make_operands(TensorType t, size_t N, size_t nb, size_t T, uint32_t seed, int extreme) {
  std::mt19937 rng(seed);
  const size_t bb = block_bytes(t);
  Operands o;
  o.w.resize(N * nb * bb);
  for (auto& v : o.w) v = uint8_t(rng());
  o.x.resize(T * nb);
  for (size_t i = 0; i < N * nb; ++i) {
    uint8_t* blk = &o.w[i * bb];
    uint16_t d = uint16_t(0x2000 + rng() % 0x3000);
    if (rng() % 2) d |= 0x8000;
    if ((extreme & 2) && i % 5 == 2) d = 0;
    std::memcpy(blk, &d, 2);
    if ((extreme & 1) && i % 3 == 0)
      std::memset(blk + 2, t == TensorType::Q8_0 ? 0x80 : 0x00, bb - 2);
  }
  for (size_t i = 0; i < T * nb; ++i) {
    o.x[i].d = float(int(rng() % 20001) - 10000) * 1e-5f;
    if ((extreme & 2) && i % 7 == 3) o.x[i].d = 0.0f;
    for (int8_t& q : o.x[i].qs) q = int8_t(rng());
    if ((extreme & 1) && i % 2 == 0) std::memset(o.x[i].qs, 0x80, 32);
  }
  return o;
}

// gemm equals the scalar reference's bits on N rows x T tokens x nb blocks; y has a row stride
// of N + 3 whose extra columns must stay untouched.
void expect_gemm_equal(GemmFn gemm, TensorType t, size_t N, size_t T, size_t nb, uint32_t seed,
                       int extreme, const std::string& what) {
  const Operands o = make_operands(t, N, nb, T, seed, extreme);
  const size_t ldy = N + 3, K = nb * tzero::kQBlock, rb = nb * block_bytes(t);
  std::vector<float> want(T * ldy, -7.0f), got(T * ldy, -7.0f);
  tzero::scalar_kernels().gemm_for(t)(o.w.data(), rb, o.x.data(), K, N, T, want.data(), ldy);
  gemm(o.w.data(), rb, o.x.data(), K, N, T, got.data(), ldy);
  ASSERT_EQ(std::memcmp(want.data(), got.data(), want.size() * sizeof(float)), 0)
      << what << " " << tzero::traits(t).name << " rows=" << N << " tokens=" << T
      << " blocks=" << nb << " extreme=" << extreme;
}

const size_t kTokens[] = {1, 2, 3, 8, 15, 16, 17, 31, 32, 33, 40};
const size_t kRowCounts[] = {1, 2, 15, 16, 17, 31, 32, 33, 40};
const size_t kBlockCounts[] = {1, 7, 8, 9, 64};

// The emulated tile kernel itself at every shape around the tile sizes (16 rows, 16 tokens, 8
// blocks per float pass, 32 x 32 per pass), batches of 1 included.
TEST(AmxKernels, EmulatedTileGemmEqualsScalarBits) {
  if (!runs("amx-emu")) GTEST_SKIP() << "the emulated AMX kernels need the avx512 set";
  uint32_t seed = 1;
  for (TensorType t : {TensorType::Q8_0, TensorType::Q4_0}) {
    const GemmFn gemm = tzero::amx_emulated_tile_gemm(t);
    ASSERT_NE(gemm, nullptr);
    for (size_t nb : kBlockCounts)
      for (size_t N : kRowCounts)
        for (size_t T : kTokens) expect_gemm_equal(gemm, t, N, T, nb, seed++, 0, "amx-emu tiles");
    for (size_t T = 1; T <= 40; ++T)
      expect_gemm_equal(gemm, t, 17, T, 9, seed++, 0, "amx-emu tiles");
  }
}

TEST(AmxKernels, EmulatedTileGemmExtremesEqualScalarBits) {
  if (!runs("amx-emu")) GTEST_SKIP() << "the emulated AMX kernels need the avx512 set";
  uint32_t seed = 1000;
  for (TensorType t : {TensorType::Q8_0, TensorType::Q4_0})
    for (int extreme = 1; extreme <= 3; ++extreme)
      for (size_t nb : kBlockCounts)
        for (size_t N : {1, 16, 33})
          for (size_t T : {1, 16, 17, 33})
            expect_gemm_equal(tzero::amx_emulated_tile_gemm(t), t, N, T, nb, seed++, extreme,
                              "amx-emu tiles");
}

// The kernel sets (batches below 16 tokens take the avx512 kernels) through matmul: quantized
// activations from real floats, two threads (each configures its own tiles), and chunks of
// tokens larger than one pass.
void expect_set_matmul_equal(const KernelSet& k) {
  tzero::ThreadPool pool(2);
  uint32_t seed = 77;
  for (TensorType t : {TensorType::Q8_0, TensorType::Q4_0})
    for (size_t K : {32, 288, 2048})
      for (size_t N : {5, 40, 100})
        for (size_t T : {1, 15, 16, 17, 33, 70}) {
          const auto wf = tzero::test::random_floats(N * K, seed++);
          const size_t rb = tzero::row_bytes(t, K);
          std::vector<uint8_t> w(N * rb);
          for (size_t r = 0; r < N; ++r) tzero::quantize_row(t, &wf[r * K], &w[r * rb], K);
          const tzero::Matrix m{t, w.data(), int64_t(N), int64_t(K), rb};
          const auto x = tzero::test::random_floats(T * K, seed++);
          tzero::MatmulScratch scratch;
          std::vector<float> want(T * N), got(T * N, -1.0f);
          tzero::matmul(pool, tzero::scalar_kernels(), m, x.data(), T, want.data(), scratch);
          tzero::matmul(pool, k, m, x.data(), T, got.data(), scratch);
          ASSERT_EQ(std::memcmp(want.data(), got.data(), want.size() * sizeof(float)), 0)
              << k.name << " " << tzero::traits(t).name << " K=" << K << " N=" << N << " T=" << T;
        }
}

TEST(AmxKernels, EmulatedSetMatmulEqualsScalarBits) {
  if (!runs("amx-emu")) GTEST_SKIP() << "the emulated AMX kernels need the avx512 set";
  expect_set_matmul_equal(tzero::select_kernels("amx-emu"));
}

// The real tiles, where this CPU has AMX and the self-check passed.
TEST(AmxKernels, RealTilesEqualScalarBits) {
  std::string why;
  if (!tzero::amx_usable(&why)) GTEST_SKIP() << "no AMX on this machine: " << why;
  const KernelSet& k = tzero::select_kernels("amx");
  EXPECT_STREQ(k.name, "amx");
  expect_set_matmul_equal(k);
  uint32_t seed = 5000;
  for (TensorType t : {TensorType::Q8_0, TensorType::Q4_0})
    for (int extreme = 0; extreme <= 3; ++extreme)
      for (size_t nb : kBlockCounts)
        for (size_t N : kRowCounts)
          for (size_t T : {16, 17, 31, 32, 33, 40})  // the set's tile path (16 tokens or more)
            expect_gemm_equal(k.gemm_for(t), t, N, T, nb, seed++, extreme, "amx");
}

// The self-check that guards the real tiles accepts correct tiles and refuses a TDPBSSD that
// loses one product (run over the emulator, so it is tested on any CPU).
TEST(AmxKernels, SelfCheckAcceptsEmulatorAndRefusesBrokenTiles) {
  if (!runs("amx-emu")) GTEST_SKIP() << "the emulated AMX kernels need the avx512 set";
  std::string why;
  EXPECT_TRUE(tzero::amx_self_check_emulated(false, &why)) << why;
  why.clear();
  EXPECT_FALSE(tzero::amx_self_check_emulated(true, &why));
  EXPECT_NE(why.find("differs from the scalar reference"), std::string::npos) << why;
}

// --kernels amx forces the real tiles and fails clearly where they cannot run; amx-emu is never
// what auto picks nor one of the available variants.
TEST(AmxKernels, SelectionForcesAmxOrFailsClearly) {
  std::string why;
  if (tzero::amx_usable(&why)) {
    EXPECT_STREQ(tzero::select_kernels("amx").name, "amx");
    EXPECT_STREQ(tzero::select_kernels("auto").name, "amx");
  } else {
    std::printf("AMX not available here: %s\n", why.c_str());
    EXPECT_FALSE(why.empty());
    try {
      tzero::select_kernels("amx");
      ADD_FAILURE() << "--kernels amx succeeded without AMX";
    } catch (const tzero::Error& e) {
      EXPECT_EQ(std::string(e.what()), "--kernels amx: " + why);
    }
    EXPECT_STRNE(tzero::select_kernels("auto").name, "amx");
  }
  for (const KernelSet* k : tzero::available_kernels()) EXPECT_STRNE(k->name, "amx-emu");
  EXPECT_STRNE(tzero::select_kernels("auto").name, "amx-emu");
  if (runs("amx-emu")) {
    const KernelSet& e = tzero::select_kernels("amx-emu");
    EXPECT_STREQ(e.name, "amx-emu");
    // Everything but the two quantized gemms is the avx512 set's.
    const KernelSet& v = tzero::select_kernels("avx512");
    EXPECT_EQ(e.gemm_q4_k, v.gemm_q4_k);
    EXPECT_EQ(e.attn_scores, v.attn_scores);
    EXPECT_EQ(e.attn_block, v.attn_block);
    EXPECT_NE(e.gemm_q8_0, v.gemm_q8_0);
    EXPECT_NE(e.gemm_q4_0, v.gemm_q4_0);
  }
}

}  // namespace

namespace {
bool check_passes(std::string*) {
  return true;
}
bool check_fails(std::string* why) {
  *why = "no";
  return false;
}
bool check_faults(std::string*) {
  std::raise(SIGILL);  // what a wrong tile instruction or configuration does
  return true;
}
}  // namespace

// The AMX self-check runs first in a child process (kernel_set.cpp): a fault there costs AMX,
// with a reason, and never the process; a check that returns (true or false) lets the caller
// run it in process.
TEST(AmxKernels, SelfCheckFaultInAChildIsReportedNotFatal) {
  std::string why;
  EXPECT_TRUE(tzero::survives_in_child(check_passes, &why));
  EXPECT_TRUE(tzero::survives_in_child(check_fails, &why));
  EXPECT_FALSE(tzero::survives_in_child(check_faults, &why));
  EXPECT_NE(why.find("signal " + std::to_string(SIGILL)), std::string::npos) << why;
}
