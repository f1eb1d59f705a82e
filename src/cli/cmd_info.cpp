// tzero info: print a GGUF file's metadata and tensors (keys and names cut to 200 bytes, control
// bytes escaped: they come from the file), the keys of its architecture that tzero does not know,
// and with --keys ARCH the key table of an architecture (model/model_keys.h) as docs/MODELS.md
// shows it.
#include <cstdio>
#include <memory>

#include "base/error.h"
#include "base/excerpt.h"
#include "cli/commands.h"
#include "format/gguf.h"
#include "model/kv_cache.h"
#include "model/model_keys.h"

namespace tzero::cli {

namespace {

// The key table of one architecture as a Markdown table (docs/MODELS.md holds these verbatim;
// a test compares them).
std::string key_table_markdown(const std::string& arch_name, Arch arch) {
  std::string s = "| key | tzero | absent, or the values accepted | what it does |\n";
  s += "|---|---|---|---|\n";
  for (const auto& k : model_keys(arch)) {
    std::string values(k.values);
    if (k.use == KeyUse::Refused && values.empty()) values = "(any value refused)";
    if (k.use == KeyUse::NoMath) values = "-";
    for (size_t at = values.find('|'); at != std::string::npos; at = values.find('|'))
      values.replace(at, 1, " or ");
    s += "| `" + arch_name + "." + std::string(k.suffix) + "` | " + std::string(to_string(k.use)) +
         " | " + values + " | " + std::string(k.what) + " |\n";
  }
  return s;
}

}  // namespace

Command add_info(CLI::App& app) {
  auto* sub = app.add_subcommand("info", "Print a GGUF file's metadata and tensors");
  auto model = std::make_shared<std::string>();
  auto all = std::make_shared<bool>(false);
  auto keys = std::make_shared<std::string>();
  sub->add_option("-m,--model", *model, "GGUF file");
  sub->add_flag("--all", *all, "Show every element of long arrays' first items (up to 64)");
  sub->add_option("--keys", *keys,
                  "Print the key table of an architecture (llama, qwen2, qwen3, qwen2moe, "
                  "qwen3moe, gemma2, gemma3, phi3, gpt-oss, glm4moe, deepseek2): every GGUF key "
                  "llama.cpp reads for it and "
                  "what tzero does with it");
  return {sub, [model, all, keys] {
            if (!keys->empty()) {
              const auto arch = arch_from_name(*keys);
              if (!arch)
                throw Error("--keys: unknown architecture '" + excerpt(*keys) +
                            "' (llama, qwen2, qwen3, qwen2moe, qwen3moe, gemma2, gemma3, "
                            "phi3, gpt-oss, glm4moe, deepseek2)");
              std::printf("%s", key_table_markdown(*keys, *arch).c_str());
              return 0;
            }
            if (model->empty()) throw Error("info: --model is required (or --keys ARCH)");
            GgufFile f(*model);
            std::printf("file: %s\nGGUF version %u, %zu bytes, alignment %u, data at %zu\n",
                        f.path().c_str(), f.version(), f.file_size(), f.alignment(),
                        f.data_offset());
            std::printf("\nmetadata (%zu):\n", f.metadata().size());
            for (const auto& [key, v] : f.metadata())
              std::printf("  %-45s %-7s %s\n", excerpt(key).c_str(), gguf_value_type_name(v.type),
                          v.to_display(*all ? 64 : 8).c_str());
            std::printf("\ntensors (%zu):\n", f.tensors().size());
            size_t total = 0;
            for (const auto& t : f.tensors()) {
              std::string shape;
              for (size_t i = 0; i < t.ne.size(); ++i)
                shape += (i ? " x " : "") + std::to_string(t.ne[i]);
              std::printf("  %-40s %-6s %-22s %12zu bytes\n", excerpt(t.name).c_str(),
                          tensor_type_name(uint32_t(t.type)).c_str(), shape.c_str(), t.n_bytes);
              total += t.n_bytes;
            }
            std::printf("total tensor data: %zu bytes\n", total);
            const std::string arch_name = f.get_string("general.architecture");
            if (const auto arch = arch_from_name(arch_name)) {
              const auto unknown = unknown_model_keys(f, *arch, arch_name);
              std::printf("\nkeys of '%s' tzero does not know (not applied): %s\n",
                          excerpt(arch_name).c_str(), unknown.empty() ? "none" : "");
              for (const auto& k : unknown) std::printf("  %s\n", excerpt(k).c_str());
              // What one sequence holds when the file's hyper-parameters read (a file tzero
              // would refuse says why when it is run; info still lists it).
              try {
                const HParams hp = read_hparams(f);
                const int attn = hp.n_attention_layers();
                std::printf(
                    "\nmemory per sequence: %zu bytes of keys and values per position (f32; "
                    "%d of %d layers attend), %zu bytes of recurrent state (%d linear-attention "
                    "layers; f32)\n",
                    KvStore::bytes_per_block(hp, 1, KvType::F32), attn, hp.n_layer,
                    KvStore::state_bytes_per_slot(hp), hp.n_recurrent_layers());
              } catch (const std::exception&) {
              }
            }
            return 0;
          }};
}

}  // namespace tzero::cli
