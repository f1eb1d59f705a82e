// Decode against the memory bus, per weight type: the single-token matmuls of a 1B model
// (TinyLlama's seven projections of a layer, 2048 wide) over far more weights than any cache
// holds, through tzero::matmul (activation quantization and the thread pool included), with
// the machine's streaming-read rate measured on the same threads just before and after
// (kernels/stream_read.h). Prints weight GB/s and its fraction of the streaming read.
//   tz_bench_decode [--threads 1,2] [--types q4_0,q4_k,...] [--kernels NAME] [--mib 512]
//                   [--kib N] [--seconds 1.5] [--tokens 1] [--layout auto|file|rows16]
// --layout: auto lays the matrices out as a session's load does for the set (Blocks8 or Rows16
// for the types it reads that way: kernels/weight_layout.h, kernels/rows16.h), file keeps the
// file's layout, rows16 puts the K-quants that have an avx512 Rows16 kernel in Rows16.
// --tokens N: N activation rows per matmul (the batched engine's decode of N sequences); the
// rate is still weight bytes over time, so N tokens at the bus read at the same GB/s as one.
// A total below one layer (--kib 512, say) shrinks the matrices to fit a core's L2: the rate
// is then the kernel's compute ceiling, which decode needs well above the streaming read.
// Each (type, threads) runs its weights for about --seconds, in three rounds between stream
// reads; the fraction printed is the median of the rounds' own fractions.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "base/huge_pages.h"
#include "base/rng.h"
#include "base/thread_pool.h"
#include "format/tensor_type.h"
#include "kernels/kernel_set.h"
#include "kernels/rows16.h"
#if defined(__x86_64__)
#include "kernels/x86/rows16_kernels.h"
#endif
#include "kernels/matmul.h"
#include "kernels/quant.h"
#include "kernels/stream_read.h"
#include "kernels/weight_layout.h"

namespace {

using tzero::TensorType;

double now() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

std::vector<std::string> split(const std::string& s) {
  std::vector<std::string> out;
  size_t b = 0;
  while (b <= s.size()) {
    const size_t e = std::min(s.find(',', b), s.size());
    if (e > b) out.push_back(s.substr(b, e - b));
    b = e + 1;
  }
  return out;
}

// The seven matmuls of a TinyLlama layer: (rows, cols).
constexpr size_t kShapes[7][2] = {{2048, 2048}, {256, 2048},  {256, 2048}, {2048, 2048},
                                  {5632, 2048}, {5632, 2048}, {2048, 5632}};

struct Layers {
  // One buffer per matrix, in 2 MiB pages where the kernel gives them: the memory a model file
  // is read into by default (base/mapped_file.h).
  std::vector<tzero::HugePageBuffer> bytes;
  std::vector<tzero::Matrix> mats;
  double total_bytes = 0;
};

// Rows of matrix i: the layer's, or fewer when one layer is more than `bytes` (a small total,
// to measure a core's compute rate on weights its own caches hold).
size_t rows_of(size_t i, double scale) {
  return std::max<size_t>(16, size_t(double(kShapes[i % 7][0]) * scale) / 16 * 16);
}

// One layer quantized from random values, copied until the weights reach `bytes`; Blocks8 when
// `blocks8`, Rows16 (kernels/rows16.h) when `rows16` (the matrices' row counts are multiples of
// 16).
Layers make_layers(TensorType t, size_t bytes, bool blocks8, bool rows16) {
  double layer = 0;
  for (const auto& s : kShapes) layer += double(tzero::row_bytes(t, s[1]) * s[0]);
  const double scale = std::min(1.0, double(bytes) / layer);
  tzero::SplitMix64 rng(7);
  std::vector<std::vector<uint8_t>> one;
  for (size_t i = 0; i < 7; ++i) {
    const size_t s[2] = {rows_of(i, scale), kShapes[i][1]};
    const size_t rb = tzero::row_bytes(t, s[1]);
    std::vector<uint8_t> b(rb * s[0]);
    std::vector<float> row(s[1]);
    for (size_t r = 0; r < s[0]; ++r) {
      for (float& x : row) x = float(rng.uniform()) * 2.0f - 1.0f;
      tzero::quantize_row(t, row.data(), b.data() + r * rb, s[1]);
    }
    if (blocks8) tzero::to_blocks8(t, b.data(), s[0], rb);
    if (rows16) tzero::to_rows16(t, b.data(), s[0], rb);
    one.push_back(std::move(b));
  }
  Layers L;
  while (L.total_bytes < double(bytes))
    for (size_t i = 0; i < 7; ++i) {
      L.bytes.emplace_back(one[i].size());
      if (!L.bytes.back()) throw std::runtime_error("cannot allocate the weights");
      std::memcpy(L.bytes.back().data(), one[i].data(), one[i].size());
      L.total_bytes += double(one[i].size());
    }
  for (size_t i = 0; i < L.bytes.size(); ++i) {
    const size_t cols = kShapes[i % 7][1], rb = tzero::row_bytes(t, cols);
    L.mats.push_back(tzero::Matrix{t, L.bytes[i].data(), int64_t(L.bytes[i].size() / rb),
                                   int64_t(cols), rb,
                                   rows16    ? tzero::WeightLayout::Rows16
                                   : blocks8 ? tzero::WeightLayout::Blocks8
                                             : tzero::WeightLayout::File});
  }
  return L;
}

constexpr const char* kUsage =
    "usage: tz_bench_decode [--threads 1,2] [--types q4_0,q4_k,...] [--kernels NAME]\n"
    "                       [--mib 512 | --kib N] [--seconds 1.5] [--tokens 1]\n"
    "                       [--layout auto|file|rows16]\n"
    "Decode's single-token matmuls per weight type against the streaming-read rate measured on\n"
    "the same threads; --kib below a core's L2 gives the kernel's compute ceiling.\n"
    "TZ_DECODE_ROWS=side|one overrides how the x86 decode kernels walk their rows.\n"
    "--layout auto lays the weights out as a session's load does for the kernel set; rows16\n"
    "puts the K-quants and IQ4_XS in Rows16 for the avx512 set.\n";

}  // namespace

int main(int argc, char** argv) {
  std::vector<int> threads = {1, 2};
  std::vector<std::string> types = {"f16",  "bf16", "q8_0",   "q4_0",  "q4_1",
                                    "q5_0", "q5_1", "iq4_nl", "mxfp4", "q2_k",
                                    "q3_k", "q4_k", "q5_k",   "q6_k",  "iq4_xs"};
  std::string kernels = "auto";
  size_t kib = 512 * 1024;
  double seconds = 1.5;
  size_t n_tok = 1;
  std::string layout = "auto";
  for (int i = 1; i < argc; i += 2) {
    const std::string a = argv[i];
    if (a == "--help" || a == "-h") {
      std::printf("%s", kUsage);
      return 0;
    }
    if (i + 1 == argc) {
      std::fprintf(stderr, "option %s needs a value\n%s", a.c_str(), kUsage);
      return 2;
    }
    const std::string v = argv[i + 1];
    if (a == "--threads") {
      threads.clear();
      for (const std::string& s : split(v)) threads.push_back(std::atoi(s.c_str()));
    } else if (a == "--types") {
      types = split(v);
    } else if (a == "--kernels") {
      kernels = v;
    } else if (a == "--mib") {
      kib = size_t(std::atol(v.c_str())) * 1024;
    } else if (a == "--kib") {
      kib = size_t(std::atol(v.c_str()));
    } else if (a == "--tokens") {
      n_tok = size_t(std::atol(v.c_str()));
    } else if (a == "--layout" && (v == "auto" || v == "file" || v == "rows16")) {
      layout = v;
    } else if (a == "--seconds") {
      seconds = std::atof(v.c_str());
    } else {
      std::fprintf(stderr, "unknown option %s %s\n%s", a.c_str(), v.c_str(), kUsage);
      return 2;
    }
  }
  const tzero::KernelSet& k = tzero::select_kernels(kernels);
  std::printf("kernels %s, weights %zu KiB per type, %zu token(s) per matmul, layout %s\n", k.name,
              kib, n_tok, layout.c_str());
  std::printf("%-7s %3s %10s %10s %8s\n", "type", "thr", "GB/s", "stream", "fraction");
  for (const std::string& name : types) {
    const std::optional<TensorType> parsed = tzero::tensor_type_from_name(name);
    if (!parsed) {
      std::fprintf(stderr, "unknown type %s\n", name.c_str());
      return 2;
    }
    const TensorType t = *parsed;
    // auto: as a session's load lays the matrices out for k; rows16: Rows16 with the avx512
    // set's kernel even where the set does not choose it (Q6_K).
    tzero::KernelSet kr = k;
    if (layout == "rows16") {
      tzero::GemmFn* slot = kr.layout_slot(tzero::WeightLayout::Rows16, t);
#if defined(__x86_64__)
      if (slot && std::strcmp(k.name, "avx512") == 0) *slot = tzero::x86::avx512_rows16_kernel(t);
#endif
      if (!kr.gemm_rows16_for(t)) {
        std::fprintf(stderr,
                     "--layout rows16 takes q4_k, q5_k, q6_k and iq4_xs on the avx512 set only\n");
        return 2;
      }
    }
    const bool rows16 = layout != "file" && kr.gemm_rows16_for(t);
    const bool blocks8 = layout == "auto" && !rows16 && k.gemm_blocks8_for(t);
    const Layers L = make_layers(t, kib << 10, blocks8, rows16);
    std::vector<float> x(5632 * n_tok), y(5632 * n_tok);
    tzero::SplitMix64 rng(9);
    for (float& v : x) v = float(rng.uniform()) * 2.0f - 1.0f;
    for (int nt : threads) {
      tzero::ThreadPool pool(nt);
      tzero::MatmulScratch scratch;
      // Each round: a streaming read, then the matmuls, then another read; the round's fraction
      // is its best matmul pass over the better of its two reads (this VM's memory rate drifts
      // by up to 2x between phases a few seconds long, so a rate is compared with its
      // neighbours only). Printed: the best rates and the median of the rounds' fractions.
      double best = 0, best_stream = 0;
      std::vector<double> fractions;
      for (int round = 0; round < 3; ++round) {
        double stream = tzero::measure_stream_read(pool, kib << 10, 3).gb_per_s;
        const double t0 = now();
        double rate = 0;
        do {
          const double p0 = now();
          for (const tzero::Matrix& m : L.mats)
            tzero::matmul(pool, kr, m, x.data(), n_tok, y.data(), scratch);
          rate = std::max(rate, L.total_bytes / (now() - p0) / 1e9);
        } while (now() - t0 < seconds / 3);
        stream = std::max(stream, tzero::measure_stream_read(pool, kib << 10, 3).gb_per_s);
        fractions.push_back(rate / stream);
        best = std::max(best, rate);
        best_stream = std::max(best_stream, stream);
      }
      std::sort(fractions.begin(), fractions.end());
      std::printf("%-7s %3d %10.1f %10.1f %8.2f\n", name.c_str(), nt, best, best_stream,
                  fractions[1]);
      std::fflush(stdout);
    }
  }
  return 0;
}
