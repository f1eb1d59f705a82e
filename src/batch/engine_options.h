// What an engine's options (tzero::EngineOptions) resolve to for a model: the compute options
// its own session opens with, the size of its KV pool, and the pooling of its embeddings.
#pragma once

#include <string>

#include "model/hparams.h"
#include "runtime/session.h"
#include "tzero/engine.h"

namespace tzero {

// The compute options an engine's own session opens with (runtime/session.h).
tzero::ComputeOptions compute_options_of(const EngineOptions& o);

// The KV pool's positions: kv_tokens, else what kv_bytes holds, else every slot at full
// context capped at 1 GiB of cache (never below one full context).
int pool_tokens(const EngineOptions& o, const tzero::HParams& hp, int n_ctx);

// What Pooling::model means (ModelInfo::pooling): the option when it names a pooling, else the
// file's {arch}.pooling_type (llama.cpp's numbers), else mean. none: embeddings refused, the
// note says why.
Pooling default_pooling(const EngineOptions& o, const tzero::HParams& hp, std::string& note);

}  // namespace tzero
