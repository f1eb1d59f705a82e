#include "cli/lock_flags.h"

#include "cli/commands.h"
#include "cli/compute_flags.h"

namespace tzero::cli {

void add_lock_flags(CLI::App* sub, LockFlags& f) {
  f.engine.threads = default_threads();
  f.model = sub->add_option("-m,--model", f.engine.model, "GGUF model file (a local run)");
  f.ctx = sub->add_option("-c,--ctx", f.engine.ctx, "Context per sequence (0: min(trained, 4096))")
              ->check(CLI::Range(0, 1 << 20));
  f.kernels = sub->add_option("--kernels", f.engine.kernels, kernels_help());
  f.mode = sub->add_option("--mode", f.engine.mode, "deterministic (the contract) or fast")
               ->check(CLI::IsMember({"deterministic", "fast"}));
  f.kv_type =
      sub->add_option("--kv-type", f.engine.kv_type, "KV cache type: f32 or f16 (changes the bits)")
          ->check(CLI::IsMember({"f32", "f16"}));
  f.threads = sub->add_option("-t,--threads", f.engine.threads,
                              "Compute threads (results do not depend on it)")
                  ->check(CLI::Range(1, 1024));
  sub->add_flag_callback(
      "--no-mmap", [&f] { f.engine.use_mmap = false; },
      "Read the model file into memory instead of mapping it (a local run)");
  f.chat_template = sub->add_option("--chat-template", f.engine.chat_template,
                                    "Chat template instead of the model's: a name (llama2, "
                                    "llama3, chatml, ...) or a Jinja file (the lock keeps its "
                                    "path)");
  sub->add_option("--base-url", f.server.base_url,
                  "An OpenAI-compatible server instead of a local engine (http://host:port)");
  sub->add_option("--api-key", f.server.api_key, "Bearer token for --base-url");
  sub->add_option("--model-name", f.server.model_name,
                  "\"model\" sent to --base-url for requests that name none");
  sub->add_option("--timeout", f.server.timeout_s, "Seconds one request to --base-url may take")
      ->capture_default_str()
      ->check(CLI::Range(0.1, 86400.0));
}

lock::EngineConfig merged_engine(const LockFlags& f, const lock::EngineConfig* base) {
  if (!base) return f.engine;
  lock::EngineConfig c = *base;
  if (f.model->count()) c.model = f.engine.model;
  if (f.ctx->count()) c.ctx = f.engine.ctx;
  if (f.kernels->count()) c.kernels = f.engine.kernels;
  if (f.mode->count()) c.mode = f.engine.mode;
  if (f.kv_type->count()) c.kv_type = f.engine.kv_type;
  c.threads = f.engine.threads;  // this machine's (the bits do not depend on it)
  c.use_mmap = f.engine.use_mmap;
  if (f.chat_template->count()) c.chat_template = f.engine.chat_template;
  return c;
}

}  // namespace tzero::cli
