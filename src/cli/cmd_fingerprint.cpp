// tzero fingerprint: what identifies the numerics of a model under tzero (runtime/fingerprint.h).
#include <cstdio>
#include <memory>

#include "backend/backend.h"
#include "cli/commands.h"
#include "kernels/kernel_set.h"
#include "runtime/fingerprint.h"

namespace tzero::cli {

Command add_fingerprint(CLI::App& app) {
  auto* sub = app.add_subcommand("fingerprint",
                                 "Print the numerics fingerprint of a model and configuration");
  struct Opts {
    std::string model, mode = "deterministic", kernels = "auto";
    bool json = false;
    int n_ctx = 0;
  };
  auto o = std::make_shared<Opts>();
  sub->add_option("-m,--model", o->model, "GGUF model file")->required();
  sub->add_option("--mode", o->mode, "deterministic, fast or portable (GPU)")
      ->capture_default_str()
      ->check(CLI::IsMember({"deterministic", "fast", "portable"}));
  sub->add_option("--kernels", o->kernels, "scalar, avx2, avx512, amx, amx-emu or auto")
      ->capture_default_str();
  sub->add_option("-c,--ctx-size", o->n_ctx,
                  "Context size the run uses (0: min(trained, 4096)); hashed only for LongRoPE "
                  "models, whose rope factors it chooses")
      ->capture_default_str();
  sub->add_flag("--json", o->json, "Print {\"fingerprint\": HASH, \"manifest\": {...}} as JSON");
  return {
      sub, [o] {
        auto model = Model::load(o->model);
        Fingerprint fp =
            compute_fingerprint(*model, mode_arg(o->mode), select_kernels(o->kernels).name, {},
                                "f32", model->hparams().context_or_default(o->n_ctx));
        // Shown, not hashed: the device --gpu-layers would use (backend/backend.h).
        fp.manifest["device"] = {{"cuda_built", cuda_built()},
                                 {"device", describe_device(cuda_device_info())}};
        if (o->json)
          std::printf(
              "%s\n",
              nlohmann::json{{"fingerprint", fp.hash}, {"manifest", fp.manifest}}.dump().c_str());
        else
          std::printf("fingerprint %s\n%s\n", fp.hash.c_str(), fp.manifest.dump(2).c_str());
        return 0;
      }};
}

}  // namespace tzero::cli
