// The AMX tile operations the AMX kernels (amx_gemm.h) are written over, and two implementations
// of them: AmxHw, the real instructions (only where this file is compiled with -mamx-tile
// -mamx-int8: kernels/x86/amx.cpp), and AmxEmu, a scalar emulator with the instructions'
// semantics (Intel SDM vol. 2, LDTILECFG, TILELOADD, TILESTORED, TILEZERO, TILERELEASE,
// TDPBSSD; exception class AMX-E3/E4/E5 shape checks). The kernel is one template over the
// interface, so on a CPU without AMX the tests run exactly the kernel the hardware would run
// (same packing, same tile shapes, same float part) with only the instructions substituted.
//
// INTERFACE (a struct of static functions; tile numbers are compile-time constants because the
// instructions encode them):
//   configure(const AmxTileConfig& c)  LDTILECFG: palette 1 shapes for the 8 tiles
//   release()                          TILERELEASE: back to the init state (no configuration)
//   zero<T>()                          TILEZERO tmmT
//   load<T>(base, stride)              TILELOADD: row r (r < rows[T]) = colsb[T] bytes at
//                                      base + r * stride; the rest of the tile is zeroed
//   store<T>(base, stride)             TILESTORED: rows[T] rows of colsb[T] bytes
//   dpbssd<C, A, B>()                  TDPBSSD: C[m][n] += sum_{k < colsb[A]/4} sum_{i < 4}
//                                      A[m][4k+i] * B[k][4n+i] (int8 x int8 -> int32, wrapping)
// Shapes: rows[C] == rows[A], colsb[C] == colsb[B], colsb[A] / 4 == rows[B], C, A, B distinct;
// at most 16 rows x 64 bytes per tile. The hardware raises #UD on a violation (or on any tile
// instruction before LDTILECFG); the emulator prints the rule and aborts, so a shape error is
// found on any CPU.
//
// Linux grants the tile data state per process (arch_prctl(ARCH_REQ_XCOMP_PERM, XTILEDATA),
// kernels/kernel_set.cpp) and the configuration is per thread: each gemm call configures the
// tiles of its thread on entry and releases them on exit (amx_gemm.h, AmxScope).
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>

// GCC spells the macros __AMX_TILE__, clang 14 __AMXTILE__.
#if (defined(__AMX_TILE__) || defined(__AMXTILE__)) && \
    (defined(__AMX_INT8__) || defined(__AMXINT8__))
#include <immintrin.h>
#define TZ_AMX_INTRINSICS 1
#endif

namespace tzero::x86 {
namespace {

// The 64-byte LDTILECFG operand, palette 1: 8 tiles, at most 16 rows x 64 bytes each.
struct alignas(64) AmxTileConfig {
  uint8_t palette_id;    // 1 (0 = release)
  uint8_t start_row;     // 0 (nonzero only while restarting an interrupted load/store)
  uint8_t reserved[14];  // must be 0
  uint16_t colsb[16];    // bytes per row of tile i; entries 8..15 must be 0
  uint8_t rows[16];      // rows of tile i; entries 8..15 must be 0
};
static_assert(sizeof(AmxTileConfig) == 64);

constexpr int kAmxTiles = 8, kAmxMaxRows = 16, kAmxMaxColsb = 64;

// ---- the emulator --------------------------------------------------------------------------

[[noreturn]] inline void amx_emu_fault(const char* what) {
  std::fprintf(stderr, "tzero AMX emulator: #UD: %s\n", what);
  std::abort();
}

struct AmxEmuState {
  bool configured = false;
  uint16_t colsb[kAmxTiles] = {};
  uint8_t rows[kAmxTiles] = {};
  alignas(64) uint8_t tile[kAmxTiles][kAmxMaxRows][kAmxMaxColsb] = {};  // one thread's tiles
};

struct AmxEmu {
  static AmxEmuState& state() {
    thread_local AmxEmuState s;  // tile registers are per thread, as on the hardware
    return s;
  }
  static bool valid(const AmxEmuState& s, int t) {
    return s.configured && s.rows[t] != 0 && s.colsb[t] != 0;
  }

  // LDTILECFG: a malformed configuration is #UD; palette 0 releases.
  static void configure(const AmxTileConfig& c) {
    AmxEmuState& s = state();
    if (c.palette_id == 0) {
      release();
      return;
    }
    if (c.palette_id != 1) amx_emu_fault("LDTILECFG: palette other than 0 or 1");
    for (uint8_t r : c.reserved)
      if (r) amx_emu_fault("LDTILECFG: reserved bytes 2..15 not zero");
    for (int t = kAmxTiles; t < 16; ++t)
      if (c.colsb[t] || c.rows[t]) amx_emu_fault("LDTILECFG: tiles 8..15 configured");
    for (int t = 0; t < kAmxTiles; ++t) {
      if (c.colsb[t] > kAmxMaxColsb) amx_emu_fault("LDTILECFG: more than 64 bytes per row");
      if (c.rows[t] > kAmxMaxRows) amx_emu_fault("LDTILECFG: more than 16 rows");
      if ((c.colsb[t] == 0) != (c.rows[t] == 0)) amx_emu_fault("LDTILECFG: rows xor colsb 0");
    }
    if (c.start_row) amx_emu_fault("LDTILECFG: start_row not 0 (this emulator never restarts)");
    s.configured = true;
    std::memcpy(s.colsb, c.colsb, sizeof(s.colsb));
    std::memcpy(s.rows, c.rows, sizeof(s.rows));
    std::memset(s.tile, 0, sizeof(s.tile));
  }
  static void release() {
    AmxEmuState& s = state();
    s.configured = false;
    std::memset(s.colsb, 0, sizeof(s.colsb));
    std::memset(s.rows, 0, sizeof(s.rows));
    std::memset(s.tile, 0, sizeof(s.tile));
  }

  template <int T>
  static void zero() {
    static_assert(T >= 0 && T < kAmxTiles);
    AmxEmuState& s = state();
    if (!valid(s, T)) amx_emu_fault("TILEZERO: tile not configured");
    std::memset(s.tile[T], 0, sizeof(s.tile[T]));
  }
  template <int T>
  static void load(const void* base, size_t stride) {
    static_assert(T >= 0 && T < kAmxTiles);
    AmxEmuState& s = state();
    if (!valid(s, T)) amx_emu_fault("TILELOADD: tile not configured");
    if (s.colsb[T] % 4) amx_emu_fault("TILELOADD: colsb not a multiple of 4");
    std::memset(s.tile[T], 0, sizeof(s.tile[T]));
    const uint8_t* p = static_cast<const uint8_t*>(base);
    for (int r = 0; r < s.rows[T]; ++r) std::memcpy(s.tile[T][r], p + r * stride, s.colsb[T]);
  }
  template <int T>
  static void store(void* base, size_t stride) {
    static_assert(T >= 0 && T < kAmxTiles);
    const AmxEmuState& s = state();
    if (!valid(s, T)) amx_emu_fault("TILESTORED: tile not configured");
    if (s.colsb[T] % 4) amx_emu_fault("TILESTORED: colsb not a multiple of 4");
    uint8_t* p = static_cast<uint8_t*>(base);
    for (int r = 0; r < s.rows[T]; ++r) std::memcpy(p + r * stride, s.tile[T][r], s.colsb[T]);
  }
  template <int C, int A, int B>
  static void dpbssd() {
    static_assert(C >= 0 && C < kAmxTiles && A >= 0 && A < kAmxTiles && B >= 0 && B < kAmxTiles);
    static_assert(C != A && A != B && C != B, "TDPBSSD: the three tiles must differ");
    AmxEmuState& s = state();
    if (!valid(s, C) || !valid(s, A) || !valid(s, B)) amx_emu_fault("TDPBSSD: tile not configured");
    if (s.colsb[C] % 4 || s.colsb[A] % 4 || s.colsb[B] % 4)
      amx_emu_fault("TDPBSSD: colsb not a multiple of 4");
    if (s.colsb[C] != s.colsb[B]) amx_emu_fault("TDPBSSD: colsb[dst] != colsb[src2]");
    if (s.rows[C] != s.rows[A]) amx_emu_fault("TDPBSSD: rows[dst] != rows[src1]");
    if (s.colsb[A] / 4 != s.rows[B]) amx_emu_fault("TDPBSSD: colsb[src1] / 4 != rows[src2]");
    const int M = s.rows[C], N = s.colsb[C] / 4, K = s.colsb[A] / 4;
    for (int m = 0; m < M; ++m) {
      int32_t out[kAmxMaxColsb / 4];
      std::memcpy(out, s.tile[C][m], sizeof(out));
      for (int k = 0; k < K; ++k)
        for (int n = 0; n < N; ++n) {
          const int8_t* a = reinterpret_cast<const int8_t*>(&s.tile[A][m][4 * k]);
          const int8_t* b = reinterpret_cast<const int8_t*>(&s.tile[B][k][4 * n]);
          // DPBD: four sign-extended byte products added to the dword, modulo 2^32.
          uint32_t acc = uint32_t(out[n]);
          for (int i = 0; i < 4; ++i) acc += uint32_t(int32_t(a[i]) * int32_t(b[i]));
          out[n] = int32_t(acc);
        }
      std::memset(s.tile[C][m], 0, kAmxMaxColsb);  // write_row_and_zero
      std::memcpy(s.tile[C][m], out, size_t(N) * 4);
    }
    for (int m = M; m < kAmxMaxRows; ++m) std::memset(s.tile[C][m], 0, kAmxMaxColsb);
  }
};

// ---- the real instructions ---------------------------------------------------------------
// GCC's tile macros paste the tile number into the assembly text, so each number is spelled out
// as a literal. Its tileloadd and ldtilecfg asm statements do not declare the memory they read
// (tilestored does clobber memory): a compiler barrier before each keeps the packing stores
// ahead of them.

#ifdef TZ_AMX_INTRINSICS
#define TZ_AMX_BARRIER() __asm__ volatile("" ::: "memory")
#define TZ_AMX_TILE_SWITCH(T, STMT) \
  if constexpr (T == 0) {           \
    STMT(0);                        \
  } else if constexpr (T == 1) {    \
    STMT(1);                        \
  } else if constexpr (T == 2) {    \
    STMT(2);                        \
  } else if constexpr (T == 3) {    \
    STMT(3);                        \
  } else if constexpr (T == 4) {    \
    STMT(4);                        \
  } else if constexpr (T == 5) {    \
    STMT(5);                        \
  } else if constexpr (T == 6) {    \
    STMT(6);                        \
  } else {                          \
    static_assert(T == 7);          \
    STMT(7);                        \
  }

struct AmxHw {
  static void configure(const AmxTileConfig& c) {
    TZ_AMX_BARRIER();
    _tile_loadconfig(&c);
  }
  static void release() { _tile_release(); }
  template <int T>
  static void zero() {
#define TZ_AMX_ZERO(t) _tile_zero(t)
    TZ_AMX_TILE_SWITCH(T, TZ_AMX_ZERO)
#undef TZ_AMX_ZERO
  }
  template <int T>
  static void load(const void* base, size_t stride) {
    TZ_AMX_BARRIER();
#define TZ_AMX_LOAD(t) _tile_loadd(t, base, stride)
    TZ_AMX_TILE_SWITCH(T, TZ_AMX_LOAD)
#undef TZ_AMX_LOAD
  }
  template <int T>
  static void store(void* base, size_t stride) {
#define TZ_AMX_STORE(t) _tile_stored(t, base, stride)
    TZ_AMX_TILE_SWITCH(T, TZ_AMX_STORE)
#undef TZ_AMX_STORE
    TZ_AMX_BARRIER();
  }
  // The tile roles of amx_gemm.h: C tiles 0..3, A tiles 4, 5, B tiles 6, 7.
  template <int C, int A, int B>
  static void dpbssd() {
    static_assert(C == 2 * (A - 4) + (B - 6) && (A == 4 || A == 5) && (B == 6 || B == 7));
    if constexpr (C == 0)
      _tile_dpbssd(0, 4, 6);
    else if constexpr (C == 1)
      _tile_dpbssd(1, 4, 7);
    else if constexpr (C == 2)
      _tile_dpbssd(2, 5, 6);
    else
      _tile_dpbssd(3, 5, 7);
  }
};
#undef TZ_AMX_TILE_SWITCH
#undef TZ_AMX_BARRIER
#endif  // TZ_AMX_INTRINSICS

}  // namespace
}  // namespace tzero::x86
