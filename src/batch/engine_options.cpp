// What an engine's options resolve to (batch/engine_options.h).
#include "batch/engine_options.h"

#include <algorithm>

#include "base/error.h"
#include "model/kv_cache.h"

namespace tzero {

int pool_tokens(const EngineOptions& o, const tzero::HParams& hp, int n_ctx) {
  if (o.kv_tokens > 0) return o.kv_tokens;
  const size_t per_token = tzero::KvStore::bytes_per_block(hp, 1, tzero::parse_kv_type(o.kv_type));
  if (o.kv_bytes > 0) {
    const size_t n = o.kv_bytes / per_token;
    tzero::check(n >= 1, "a KV cache of " + std::to_string(o.kv_bytes) +
                             " bytes holds no position (one takes " + std::to_string(per_token) +
                             " bytes)");
    return int(std::min<size_t>(n, size_t(1) << 30));
  }
  // Default: room for every slot at full context, capped at 1 GiB of cache (never below one
  // full context).
  const size_t cap = std::max<size_t>(size_t(n_ctx), (size_t(1) << 30) / per_token);
  return int(std::min(size_t(o.max_seqs) * size_t(n_ctx), cap));
}

Pooling default_pooling(const EngineOptions& o, const tzero::HParams& hp, std::string& note) {
  if (o.pooling == Pooling::mean || o.pooling == Pooling::cls || o.pooling == Pooling::last) {
    note = "option";
    return o.pooling;
  }
  const std::string key = hp.arch_name + ".pooling_type = " + std::to_string(hp.pooling_type);
  switch (hp.pooling_type) {
    case -1:
      note = "default (the file declares no pooling_type)";
      return Pooling::mean;
    case 0:
      note = key + " (none: per-token states; pooled by the default, mean)";
      return Pooling::mean;
    case 1:
      note = key + " (mean)";
      return Pooling::mean;
    case 2:
      note = key + " (cls)";
      return Pooling::cls;
    case 3:
      note = key + " (last)";
      return Pooling::last;
    case 4:
      note = "the model declares " + key +
             " (rank: a reranker's classification head, which tzero does not run); choose a "
             "pooling (mean, cls or last: --pooling) to embed with it anyway";
      return Pooling::none;
    default:
      note = "the model declares " + key +
             ", a pooling tzero does not know; choose mean, cls or last (--pooling)";
      return Pooling::none;
  }
}

tzero::ComputeOptions compute_options_of(const EngineOptions& o) {
  tzero::ComputeOptions c;
  c.n_threads = o.n_threads;
  c.kernels = o.kernels;
  c.op_overrides = o.op_overrides;
  c.mode = o.mode;
  c.gpu_layers = tzero::parse_gpu_layers_arg(o.gpu_layers);
  c.n_ctx = std::max(o.n_ctx, 0);               // (negative: the default, as it always was)
  c.n_batch = std::max(o.max_batch_tokens, 1);  // (the engine names its own budget below)
  c.kv_type = tzero::parse_kv_type(o.kv_type);
  c.use_mmap = o.use_mmap;
  return c;
}

}  // namespace tzero
