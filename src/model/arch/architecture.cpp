#include "model/arch/architecture.h"

#include "base/error.h"

namespace tzero {

std::unique_ptr<Architecture> make_architecture(const Model& model) {
  switch (model.hparams().arch) {
    case Arch::Llama:
    case Arch::Qwen2:
    case Arch::Qwen3:
      return make_llama_family(model);
  }
  throw Error("no architecture for '" + model.hparams().arch_name + "'");
}

}  // namespace tzero
