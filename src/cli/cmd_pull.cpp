// tzero pull: a GGUF file from a Hugging Face repository into the Hugging Face cache
// (hub/hf_hub.h); prints its local path on stdout.
#include <cstdio>
#include <memory>

#include "base/error.h"
#include "cli/commands.h"
#include "cli/hub_models.h"

namespace tzero::cli {

Command add_pull(CLI::App& app) {
  auto* sub = app.add_subcommand(
      "pull",
      "Download a GGUF file from a Hugging Face repository into the Hugging Face cache "
      "(HF_ENDPOINT, HF_TOKEN, HF_HUB_CACHE, HF_HUB_OFFLINE); prints its path");
  struct Opts {
    std::string repo, file, revision = "main";
  };
  auto o = std::make_shared<Opts>();
  sub->add_option("repo", o->repo,
                  "ORG/REPO with FILE, or ORG/REPO:QUANT (the .gguf whose name has QUANT, e.g. "
                  "Q4_K_M, the default)")
      ->required();
  sub->add_option("file", o->file, "The file in the repository (e.g. model-Q8_0.gguf)");
  sub->add_option("--revision", o->revision, "Branch, tag or commit")->capture_default_str();
  return {sub, [o] {
            std::optional<hub::HubRef> ref = hub::parse_model_ref(o->repo);
            if (!ref)
              throw Error("pull: '" + o->repo +
                          "' is not ORG/REPO or ORG/REPO:QUANT (a repository on the hub)");
            if (!o->file.empty()) {
              if (o->repo.find(':') != std::string::npos)
                throw Error("pull: give ORG/REPO FILE or ORG/REPO:QUANT, not both");
              ref->file = o->file;
              ref->quant.clear();
            }
            ref->revision = o->revision;
            const std::string path =
                hub::pull(*ref, hub::HubSettings::from_environment(),
                          stderr_pull_events(o->file.empty() ? o->repo : o->file));
            std::printf("%s\n", path.c_str());
            return 0;
          }};
}

}  // namespace tzero::cli
