// tzero fingerprint: what identifies the numerics of a model under tzero (runtime/fingerprint.h).
#include <cstdio>
#include <memory>

#include "backend/backend.h"
#include "cli/commands.h"
#include "cli/compute_flags.h"
#include "runtime/fingerprint.h"
#include "runtime/session.h"

namespace tzero::cli {

Command add_fingerprint(CLI::App& app) {
  auto* sub = app.add_subcommand("fingerprint",
                                 "Print the numerics fingerprint of a model and configuration");
  struct Opts {
    std::string model;
    ComputeFlags compute;
    bool json = false;
  };
  auto o = std::make_shared<Opts>();
  sub->add_option("-m,--model", o->model, "GGUF model file")->required();
  // The flags of the run it describes: the context is hashed only for LongRoPE models (it
  // chooses their rope factors); mode, KV type and --op overrides are hashed; the rest shown.
  add_compute_flags(sub, o->compute, kCtx | kKernels | kOps | kMode | kGpuLayers | kKvType);
  sub->add_flag("--json", o->json, "Print {\"fingerprint\": HASH, \"manifest\": {...}} as JSON");
  return {
      sub, [o] {
        Fingerprint fp = fingerprint_of(o->model, o->compute.options());
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
