#include "kernels/rows16.h"

#include <cstring>
#include <vector>

namespace tzero {

size_t rows16_q4_k_offset(size_t r, size_t o) {
  const size_t b = o / 144, i = o % 144, base = b * kRows16BlockBytes;
  if (i < 2) return base + 2 * r + i;
  if (i < 4) return base + 32 + 2 * r + (i - 2);
  if (i < 16) return base + 64 + 16 * (i - 4) + r;
  const size_t q = i - 16, c = q / 32, l = q % 32;
  return base + 256 + 64 * (8 * c + l / 4) + 4 * r + l % 4;
}

void to_rows16_q4_k(uint8_t* rows, size_t n_rows, size_t row_bytes) {
  std::vector<uint8_t> panel(kRows16 * row_bytes);
  for (size_t p = 0; p + kRows16 <= n_rows; p += kRows16) {
    uint8_t* src = rows + p * row_bytes;
    for (size_t r = 0; r < kRows16; ++r)
      for (size_t o = 0; o < row_bytes; ++o)
        panel[rows16_q4_k_offset(r, o)] = src[r * row_bytes + o];
    std::memcpy(src, panel.data(), panel.size());
  }
}

void from_rows16_q4_k(const uint8_t* src, uint8_t* dst, size_t n_rows, size_t row_bytes) {
  const size_t whole = n_rows / kRows16 * kRows16;
  for (size_t p = 0; p < whole; p += kRows16)
    for (size_t r = 0; r < kRows16; ++r)
      for (size_t o = 0; o < row_bytes; ++o)
        dst[(p + r) * row_bytes + o] = src[p * row_bytes + rows16_q4_k_offset(r, o)];
  std::memcpy(dst + whole * row_bytes, src + whole * row_bytes, (n_rows - whole) * row_bytes);
}

}  // namespace tzero
