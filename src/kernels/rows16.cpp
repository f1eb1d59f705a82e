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

namespace {

// One block of the 16 rows of a panel: row r's 144 bytes at rows[r] (the file's), the panel's
// 2304 at p; ToRows16 says which way. Fixed-size moves (a per-byte offset ran at 1.5 GB/s).
template <bool ToRows16, typename Panel>  // Panel: uint8_t to the panel, const uint8_t from it
void convert_block(uint8_t* const* rows, Panel* p) {
  auto move = [](uint8_t* file, Panel* panel, size_t n) {
    if constexpr (ToRows16)
      std::memcpy(panel, file, n);
    else
      std::memcpy(file, panel, n);
  };
  for (size_t r = 0; r < kRows16; ++r) {
    uint8_t* f = rows[r];
    move(f, p + 2 * r, 2);          // d
    move(f + 2, p + 32 + 2 * r, 2);  // dmin
    for (size_t k = 0; k < 12; ++k) move(f + 4 + k, p + 64 + 16 * k + r, 1);
    for (size_t g = 0; g < 32; ++g) move(f + 16 + 4 * g, p + 256 + 64 * g + 4 * r, 4);
  }
}

}  // namespace

void to_rows16_q4_k(uint8_t* rows, size_t n_rows, size_t row_bytes) {
  const size_t nb = row_bytes / 144;
  std::vector<uint8_t> panel(kRows16 * row_bytes);
  for (size_t p = 0; p + kRows16 <= n_rows; p += kRows16) {
    uint8_t* src = rows + p * row_bytes;
    for (size_t b = 0; b < nb; ++b) {
      uint8_t* r16[kRows16];
      for (size_t r = 0; r < kRows16; ++r) r16[r] = src + r * row_bytes + 144 * b;
      convert_block<true>(r16, panel.data() + b * kRows16BlockBytes);
    }
    std::memcpy(src, panel.data(), panel.size());
  }
}

void from_rows16_q4_k(const uint8_t* src, uint8_t* dst, size_t n_rows, size_t row_bytes) {
  const size_t nb = row_bytes / 144, whole = n_rows / kRows16 * kRows16;
  for (size_t p = 0; p < whole; p += kRows16)
    for (size_t b = 0; b < nb; ++b) {
      uint8_t* r16[kRows16];
      for (size_t r = 0; r < kRows16; ++r) r16[r] = dst + (p + r) * row_bytes + 144 * b;
      convert_block<false>(r16, src + p * row_bytes + b * kRows16BlockBytes);
    }
  std::memcpy(dst + whole * row_bytes, src + whole * row_bytes, (n_rows - whole) * row_bytes);
}

}  // namespace tzero
