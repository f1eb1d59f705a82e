#include "kernels/rows16.h"

#include <cstring>
#include <string>
#include <vector>

#include "base/error.h"
#include "kernels/quant_k.h"
#include "kernels/quant_k2.h"

namespace tzero {

namespace {

template <size_t Off, size_t Len, size_t Unit>
struct Seg {
  static_assert(Len % Unit == 0);
  static constexpr size_t kOff = Off, kLen = Len, kUnit = Unit;
};

// A block type's segments (rows16.h), in the file's order.
template <size_t BlockBytes, typename... Segs>
struct Layout {
  static constexpr size_t kBlock = BlockBytes;
  static_assert(((Segs::kLen) + ...) == BlockBytes, "the segments cover the block");

  static size_t offset(size_t r, size_t o) {
    const size_t b = o / kBlock, i = o % kBlock;
    size_t at = 0;
    auto seg = [&](auto s) {
      using S = decltype(s);
      if (i >= S::kOff && i < S::kOff + S::kLen) {
        const size_t j = (i - S::kOff) / S::kUnit, k = (i - S::kOff) % S::kUnit;
        at = 16 * S::kOff + 16 * S::kUnit * j + S::kUnit * r + k;
      }
    };
    (seg(Segs{}), ...);
    return b * 16 * kBlock + at;
  }

  // Row r's block (the file's bytes at f) to or from its place in a panel's block at p.
  // Fixed-size moves (a per-byte offset ran at 1.5 GB/s).
  template <bool ToRows16, typename Panel>  // Panel: uint8_t to the panel, const uint8_t from it
  static void move_row(uint8_t* f, Panel* p, size_t r) {
    auto seg = [&](auto s) {
      using S = decltype(s);
      constexpr size_t u = S::kUnit;
      for (size_t j = 0; j < S::kLen / u; ++j) {
        Panel* q = p + 16 * S::kOff + 16 * u * j + u * r;
        if constexpr (ToRows16)
          std::memcpy(q, f + S::kOff + u * j, u);
        else
          std::memcpy(f + S::kOff + u * j, q, u);
      }
    };
    (seg(Segs{}), ...);
  }
};

using Q4KLayout = Layout<144, Seg<0, 2, 2>, Seg<2, 2, 2>, Seg<4, 12, 1>, Seg<16, 128, 4>>;
using Q5KLayout =
    Layout<176, Seg<0, 2, 2>, Seg<2, 2, 2>, Seg<4, 12, 1>, Seg<16, 32, 4>, Seg<48, 128, 4>>;
using IQ4XSLayout = Layout<136, Seg<0, 2, 2>, Seg<2, 2, 2>, Seg<4, 4, 1>, Seg<8, 128, 4>>;
using Q6KLayout = Layout<210, Seg<0, 128, 4>, Seg<128, 64, 4>, Seg<192, 16, 1>, Seg<208, 2, 2>>;
using Q2KLayout = Layout<84, Seg<0, 16, 4>, Seg<16, 64, 4>, Seg<80, 2, 2>, Seg<82, 2, 2>>;
using Q3KLayout = Layout<110, Seg<0, 32, 4>, Seg<32, 64, 4>, Seg<96, 12, 4>, Seg<108, 2, 2>>;
static_assert(Q2KLayout::kBlock == sizeof(BlockQ2_K) && Q3KLayout::kBlock == sizeof(BlockQ3_K));
static_assert(offsetof(BlockQ2_K, qs) == 16 && offsetof(BlockQ2_K, d) == 80 &&
                  offsetof(BlockQ2_K, dmin) == 82 && offsetof(BlockQ3_K, qs) == 32 &&
                  offsetof(BlockQ3_K, scales) == 96 && offsetof(BlockQ3_K, d) == 108,
              "the Q2_K and Q3_K segments are the blocks of kernels/quant_k2.h");
static_assert(Q4KLayout::kBlock == sizeof(BlockQ4_K) && Q5KLayout::kBlock == sizeof(BlockQ5_K) &&
              Q6KLayout::kBlock == sizeof(BlockQ6_K) && IQ4XSLayout::kBlock == sizeof(BlockIQ4_XS));
static_assert(offsetof(BlockIQ4_XS, scales_l) == 4 && offsetof(BlockIQ4_XS, qs) == 8 &&
                  offsetof(BlockQ4_K, qs) == 16 && offsetof(BlockQ5_K, qh) == 16 &&
                  offsetof(BlockQ5_K, qs) == 48 && offsetof(BlockQ6_K, qh) == 128 &&
                  offsetof(BlockQ6_K, scales) == 192 && offsetof(BlockQ6_K, d) == 208,
              "the segments above are the blocks of kernels/quant_k.h");

template <typename F>
void with_layout(TensorType t, F&& f) {
  switch (t) {
    case TensorType::Q4_K:
      return f(Q4KLayout{});
    case TensorType::Q5_K:
      return f(Q5KLayout{});
    case TensorType::Q6_K:
      return f(Q6KLayout{});
    case TensorType::IQ4_XS:
      return f(IQ4XSLayout{});
    case TensorType::Q2_K:
      return f(Q2KLayout{});
    case TensorType::Q3_K:
      return f(Q3KLayout{});
    default:
      throw Error(std::string("Rows16: not a layout of ") + traits(t).name);
  }
}

}  // namespace

bool rows16_applies(TensorType t) {
  return t == TensorType::Q4_K || t == TensorType::Q5_K || t == TensorType::Q6_K ||
         t == TensorType::IQ4_XS || t == TensorType::Q2_K || t == TensorType::Q3_K;
}

size_t rows16_offset(TensorType t, size_t r, size_t o) {
  size_t at = 0;
  with_layout(t, [&](auto l) { at = decltype(l)::offset(r, o); });
  return at;
}

void to_rows16(TensorType t, uint8_t* rows, size_t n_rows, size_t row_bytes) {
  with_layout(t, [&](auto l) {
    using L = decltype(l);
    const size_t nb = row_bytes / L::kBlock;
    std::vector<uint8_t> panel(kRows16 * row_bytes);
    for (size_t p = 0; p + kRows16 <= n_rows; p += kRows16) {
      uint8_t* src = rows + p * row_bytes;
      for (size_t b = 0; b < nb; ++b)
        for (size_t r = 0; r < kRows16; ++r)
          L::template move_row<true>(src + r * row_bytes + L::kBlock * b,
                                     panel.data() + b * 16 * L::kBlock, r);
      std::memcpy(src, panel.data(), panel.size());
    }
  });
}

void from_rows16(TensorType t, const uint8_t* src, uint8_t* dst, size_t n_rows, size_t row_bytes) {
  const size_t whole = n_rows / kRows16 * kRows16;
  with_layout(t, [&](auto l) {
    using L = decltype(l);
    const size_t nb = row_bytes / L::kBlock;
    // Block by block, its 16 rows together: a panel block (16 blocks' bytes) stays in L1 while
    // it is taken apart.
    for (size_t p = 0; p < whole; p += kRows16)
      for (size_t b = 0; b < nb; ++b)
        for (size_t r = 0; r < kRows16; ++r)
          L::template move_row<false>(dst + (p + r) * row_bytes + L::kBlock * b,
                                      src + p * row_bytes + b * 16 * L::kBlock, r);
  });
  std::memcpy(dst + whole * row_bytes, src + whole * row_bytes, (n_rows - whole) * row_bytes);
}

void from_rows16_row(TensorType t, const uint8_t* panel, size_t r, uint8_t* dst, size_t row_bytes) {
  with_layout(t, [&](auto l) {
    using L = decltype(l);
    for (size_t b = 0; b < row_bytes / L::kBlock; ++b)
      L::template move_row<false>(dst + L::kBlock * b, panel + b * 16 * L::kBlock, r);
  });
}

}  // namespace tzero
