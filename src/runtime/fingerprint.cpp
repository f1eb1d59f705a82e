#include "runtime/fingerprint.h"

#include <map>

#include "base/hash.h"

namespace tzero {

Fingerprint compute_fingerprint(const Model& model, Mode mode, const std::string& kernel_set,
                                const std::vector<std::string>& custom_ops,
                                const std::string& kv_type, int n_ctx) {
  const HParams& hp = model.hparams();
  std::map<std::string, int> dtypes;
  for (const auto& t : model.gguf().tensors()) ++dtypes[tensor_type_name(uint32_t(t.type))];
  nlohmann::json hashed = {
      {"engine", std::string("tzero ") + TZ_VERSION},
      {"canonical_orders", kCanonicalOrders},
      {"mode", to_string(mode)},
      {"kv_cache", kv_type},
      {"model_xxh128", model.file_xxh128()},
  };
  if (!custom_ops.empty()) hashed["custom_ops"] = custom_ops;
  // Orders only some architectures use (docs/DETERMINISM.md), named only for them, so the
  // fingerprints of the others stay what they were.
  if (hp.arch == Arch::GptOss)
    hashed["model_orders"] = {"sink-v1", "moe-softmax-weight-v1", "swiglu-oai-v1", "rope-yarn-v1"};
  else if (hp.mla())
    hashed["model_orders"] = {"mla-absorbed-v1", "moe-grouped-v1", "rope-yarn-v1"};
  else if (hp.arch == Arch::Glm4Moe)
    hashed["model_orders"] = {"moe-grouped-v1"};
  else if (hp.arch == Arch::NemotronH)  // Mamba-2's scan, softplus's log
    hashed["model_orders"] = {"mamba2-v1", "log-v1", "softplus-v1"};
  else if (hp.recurrent())  // Gated DeltaNet hybrids: the recurrent form, softplus's log
    hashed["model_orders"] =
        hp.rope_scaling == RopeScaling::Yarn
            ? nlohmann::json{"delta-v1", "log-v1", "softplus-v1", "rope-yarn-v1"}
            : nlohmann::json{"delta-v1", "log-v1", "softplus-v1"};
  else if (hp.rope_scaling == RopeScaling::Yarn)
    hashed["model_orders"] = {"rope-yarn-v1"};
  if (model.longrope())
    hashed["rope_factors"] =
        n_ctx > hp.n_ctx_orig ? "long (context " + std::to_string(n_ctx) + ")" : "short";
  Fingerprint fp;
  fp.hash = xxh128_hex(hashed.dump().data(), hashed.dump().size()).substr(0, 16);
  fp.manifest = hashed;
  fp.manifest["architecture"] = {{"name", hp.arch_name},
                                 {"n_layer", hp.n_layer},
                                 {"n_embd", hp.n_embd},
                                 {"n_head", hp.n_head},
                                 {"n_head_kv", hp.n_head_kv},
                                 {"head_dim", hp.head_dim},
                                 {"n_ff", hp.n_ff},
                                 {"n_vocab", hp.n_vocab},
                                 {"rope", hp.rope_neox ? "neox" : "interleaved"},
                                 {"rope_base", hp.rope_base},
                                 {"rms_eps", hp.rms_eps},
                                 {"tied_output", model.tied_output()}};
  fp.manifest["tensor_types"] = dtypes;
  fp.manifest["not_hashed_proven_invariant"] = {
      {"kernel_set", kernel_set}, {"threads", "any"},       {"prefill_chunk", "any"},
      {"batch", "any"},           {"kv_block_size", "any"}, {"prefix_cache", "any"}};
  return fp;
}

}  // namespace tzero
