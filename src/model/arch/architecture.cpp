#include "model/arch/architecture.h"

#include "base/error.h"

namespace tzero {

std::unique_ptr<Architecture> make_architecture(const Model& model) {
  switch (model.hparams().arch) {
    case Arch::Llama:
    case Arch::Qwen2:
    case Arch::Qwen3:
    case Arch::Qwen2Moe:
    case Arch::Qwen3Moe:
    case Arch::Phi3:
      return make_llama_family(model);
    case Arch::Gemma3:
      return make_gemma3(model);
  }
  throw Error("no architecture for '" + model.hparams().arch_name + "'");
}

}  // namespace tzero
