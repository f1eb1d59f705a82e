#include "kernels/weight_layout.h"

#include <cstring>
#include <type_traits>

#include "base/error.h"
#include "kernels/matrix.h"
#include "kernels/quant.h"
#include "kernels/quant_legacy.h"
#include "kernels/rows16.h"

namespace tzero {

namespace {

// A group of 8 blocks whose fields are Sizes bytes, in order: block j's field at offset o (size
// s) is at j * kBytes + o in the file, at 8 * o + j * s in Blocks8. The sizes are constants, so
// every copy is a fixed-size move (with run-time sizes, a libc call per field: 0.75 GB/s).
template <size_t... Sizes>
struct Group {
  static constexpr size_t kBytes = (Sizes + ...);  // of one block
  template <bool ToBlocks8>
  static void convert(const uint8_t* src, uint8_t* dst) {
    size_t o = 0;
    auto field = [&](auto size) {
      constexpr size_t s = decltype(size)::value;
      for (size_t j = 0; j < 8; ++j) {
        if constexpr (ToBlocks8)
          std::memcpy(dst + 8 * o + j * s, src + j * kBytes + o, s);
        else
          std::memcpy(dst + j * kBytes + o, src + 8 * o + j * s, s);
      }
      o += s;
    };
    (field(std::integral_constant<size_t, Sizes>{}), ...);
  }
};

// f(Group<fields of t...>{}) for the 32-element types, and true; false for the others.
template <typename F>
bool with_group(TensorType t, F&& f) {
  switch (t) {
    case TensorType::Q8_0:
      return f(Group<2, 32>{}), true;
    case TensorType::Q4_0:
    case TensorType::IQ4_NL:
      return f(Group<2, 16>{}), true;
    case TensorType::Q4_1:
      return f(Group<2, 2, 16>{}), true;
    case TensorType::Q5_0:
      return f(Group<2, 4, 16>{}), true;
    case TensorType::Q5_1:
      return f(Group<2, 2, 4, 16>{}), true;
    case TensorType::MXFP4:
      return f(Group<1, 16>{}), true;
    default:
      return false;
  }
}

static_assert(Group<2, 32>::kBytes == sizeof(BlockQ8_0) &&
                  Group<2, 16>::kBytes == sizeof(BlockQ4_0) &&
                  Group<2, 16>::kBytes == sizeof(BlockIQ4_NL) &&
                  Group<2, 2, 16>::kBytes == sizeof(BlockQ4_1) &&
                  Group<2, 4, 16>::kBytes == sizeof(BlockQ5_0) &&
                  Group<2, 2, 4, 16>::kBytes == sizeof(BlockQ5_1) &&
                  Group<1, 16>::kBytes == sizeof(BlockMXFP4),
              "the field lists above are the blocks of kernels/quant.h and quant_legacy.h");

}  // namespace

bool blocks8_applies(TensorType t) {
  return with_group(t, [](auto) {});
}

void to_blocks8(TensorType t, uint8_t* rows, size_t n_rows, size_t row_bytes) {
  const bool known = with_group(t, [&](auto group) {
    using G = decltype(group);
    constexpr size_t kGroup = 8 * G::kBytes;
    const size_t groups = row_bytes / kGroup;
    uint8_t tmp[kGroup];
    for (size_t r = 0; r < n_rows; ++r)
      for (size_t g = 0; g < groups; ++g) {
        uint8_t* p = rows + r * row_bytes + g * kGroup;
        G::template convert<true>(p, tmp);
        std::memcpy(p, tmp, kGroup);
      }
  });
  if (!known)  // (the message only when thrown: kernels call these per row)
    throw Error(std::string("to_blocks8: not a 32-element block type: ") + traits(t).name);
}

void from_blocks8(TensorType t, const uint8_t* src, uint8_t* dst, size_t n_rows, size_t row_bytes) {
  const bool known = with_group(t, [&](auto group) {
    using G = decltype(group);
    constexpr size_t kGroup = 8 * G::kBytes;
    const size_t groups = row_bytes / kGroup, done = groups * kGroup;
    for (size_t r = 0; r < n_rows; ++r) {
      const uint8_t* s = src + r * row_bytes;
      uint8_t* d = dst + r * row_bytes;
      for (size_t g = 0; g < groups; ++g)
        G::template convert<false>(s + g * kGroup, d + g * kGroup);
      std::memcpy(d + done, s + done, row_bytes - done);
    }
  });
  if (!known)
    throw Error(std::string("from_blocks8: not a 32-element block type: ") + traits(t).name);
}

size_t layout_row_quantum(WeightLayout l) {
  return l == WeightLayout::Rows16 ? kRows16 : 1;
}

void unpack_rows(WeightLayout l, TensorType t, const uint8_t* src, uint8_t* dst, size_t n_rows,
                 size_t row_bytes) {
  switch (l) {
    case WeightLayout::File:
      std::memcpy(dst, src, n_rows * row_bytes);
      return;
    case WeightLayout::Blocks8:
      from_blocks8(t, src, dst, n_rows, row_bytes);
      return;
    case WeightLayout::Rows16:
      from_rows16(t, src, dst, n_rows, row_bytes);
      return;
  }
}

void Matrix::throw_split_panel() {
  throw Error("internal: a part of a Rows16 matrix that does not start and end on its panels");
}

}  // namespace tzero
