#include "model/arch/architecture.h"

#include "base/error.h"
#include "base/excerpt.h"

namespace tzero {

void Architecture::norm_and_logits(const Pass& p, const Model& model, Act rows, Act normed) const {
  check(normed.id == normed_.id, "internal: the final norm must go to normed_");
  BackendOps& o = *p.ops;
  o.gather_logits_rows(residual_, rows);
  o.rmsnorm(rows, model.output_norm(), model.hparams().rms_eps, normed, p.n_out);
  p.trace("result_norm", -1, normed, p.n_out);
  if (p.n_logits == 0) return;  // only hidden rows (embeddings)
  o.matmul(model.output(), normed, logits_, p.n_logits);
  if (model.hparams().final_softcap > 0)
    o.softcap(logits_, model.hparams().final_softcap, p.n_logits);
  p.trace("result_output", -1, logits_, p.n_logits);
}

std::unique_ptr<Architecture> make_architecture(const Model& model) {
  switch (model.hparams().arch) {
    case Arch::Llama:
    case Arch::Qwen2:
    case Arch::Qwen3:
    case Arch::Qwen2Moe:
    case Arch::Qwen3Moe:
    case Arch::Phi3:
    case Arch::GptOss:
    case Arch::Glm4Moe:
    case Arch::DeepSeek2:
    case Arch::Qwen3Next:
    case Arch::Qwen35:
    case Arch::Qwen35Moe:
      return make_llama_family(model);
    case Arch::Gemma2:
    case Arch::Gemma3:
      return make_gemma(model);
    case Arch::NemotronH:
      return make_nemotron_h(model);
  }
  throw Error("no architecture for '" + excerpt(model.hparams().arch_name) + "'");
}

}  // namespace tzero
