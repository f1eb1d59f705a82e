// llama.cpp's flag spellings (cli/llama_flags.h): the one table, and the rewrite before parsing.
#include "cli/llama_flags.h"

#include <algorithm>
#include <string_view>

#include "base/error.h"
#include "cli/usage_errors.h"

namespace tzero::cli {

namespace {

struct LlamaFlag {
  // llama.cpp's names for one flag, comma-separated.
  std::string_view spellings;
  // The tzero options it means, comma-separated: the first one the command has is used.
  std::string_view tzero;
  // Said when the command has none of them; empty: the commands that have one are named.
  std::string_view otherwise;
};

// A spelling the command has as its own option (bench's -c, -r, ...) is never rewritten.
constexpr LlamaFlag kLlamaFlags[] = {
    // Same meaning: rewritten to the tzero option.
    {"-ngl,--n-gpu-layers,--gpu-layers", "--gpu-layers", ""},
    {"--ctx-size", "--ctx-size,--ctx", ""},
    {"-np,--parallel", "--parallel", ""},
    {"--predict,--n-predict", "--n-predict", ""},
    {"-s,--seed", "--seed", ""},
    {"-b,--batch-size", "--batch-size,--batch-tokens", ""},
    {"-sys,--system-prompt", "--system", ""},
    {"--grammar-file", "--grammar", ""},
    {"-jf,--json-schema-file", "--json-schema", ""},
    {"-r,--reverse-prompt", "--stop", ""},
    {"-a,--alias", "--model-name", ""},
    {"--threads-http", "--http-threads", ""},
    {"--chat-template-file", "--chat-template", ""},
    {"-to,--timeout", "--timeout",
     "tzero serve has --request-timeout S (for a request to arrive) and --write-timeout S (for "
     "each write); tzero probe and tzero lock have --timeout S"},
    {"--log-disable", "--no-access-log",
     "not needed: tzero prints only a summary on stderr (2>/dev/null hides it)"},
    {"-v,--verbose,--log-verbose", "--verbose",
     "not supported: tzero has no verbose log (--json prints all a run knows)"},
    {"--no-mmap", "--no-mmap", ""},
    // No tzero counterpart: refused, saying why and what to use.
    {"-j", "", "tzero's --json-schema takes a FILE, not the schema's text: write it to a file"},
    {"-ub,--ubatch-size", "",
     "tzero has no micro-batch: -b/--batch-size (tzero serve: --batch-tokens) is the tokens of "
     "one forward pass, and the bits do not depend on it"},
    {"-tb,--threads-batch", "", "tzero uses -t/--threads for the prompt and the generation"},
    {"-fa,--flash-attn", "",
     "not needed: attention always runs tzero's one canonical kernel (docs/DETERMINISM.md)"},
    {"--mlock", "",
     "not supported: tzero reads the model file into memory when it fits in half the available "
     "memory and maps it otherwise (TZ_MMAP=1 maps it; --no-mmap always reads)"},
    {"--mmap", "",
     "tzero maps the model file only when it does not fit in half the available memory, or with "
     "TZ_MMAP=1 in the environment (--no-mmap always reads it)"},
    {"-cnv,--conversation,-i,--interactive,-if,--interactive-first", "",
     "tzero chat is the conversation (tzero run --messages FILE.json answers one)"},
    {"-no-cnv,--no-conversation", "", "not needed: tzero run is never a conversation"},
    {"--jinja", "",
     "not needed: tzero always renders the model's chat template (or --chat-template NAME|FILE)"},
    {"-lv,--verbosity,--log-colors,--log-file", "", "not supported: tzero has no log settings"},
    {"--api-key-file", "",
     "put the key in the environment instead: TZERO_API_KEY=\"$(cat FILE)\" tzero serve ..."},
    {"-ctk,--cache-type-k,-ctv,--cache-type-v", "",
     "tzero has one KV cache type for K and V: --kv-type f32|f16 (tzero serve, lock, verify)"},
    {"-sm,--split-mode,-mg,--main-gpu,-ts,--tensor-split,-dev,--device", "",
     "not supported: tzero uses one CUDA device, --gpu-layers N puts the last N layers on it"},
    {"-hf,--hf-repo", "--model",
     "-m ORG/REPO:QUANT takes a Hugging Face repository where a model file goes (tzero pull)"},
    {"-hff,--hf-file", "",
     "give the file with tzero pull ORG/REPO FILE, then -m with the path it prints"},
    {"-mu,--model-url", "",
     "not supported: give a local GGUF file with -m FILE, or -m ORG/REPO:QUANT (tzero pull)"},
    {"--embedding,--embeddings", "",
     "not needed: tzero serve always serves /v1/embeddings, and tzero embed prints embeddings"},
    {"--metrics", "", "not needed: tzero serve always serves /metrics"},
    {"-cb,--cont-batching,-nocb,--no-cont-batching", "",
     "not needed: tzero serve always batches continuously, each answer with its solo run's bits"},
    {"--no-warmup", "", "not needed: tzero runs no warm-up"},
    {"--numa", "", "not supported"},
    {"-md,--model-draft", "--draft-model", ""},
    {"--draft,--draft-n", "--draft-max", ""},
    {"--draft-max", "--draft-max", ""},
    {"--draft-min", "--draft-min", ""},
    {"--spec-type", "--spec-type", ""},
    {"--rope-freq-base,--rope-freq-scale,--rope-scaling,--yarn-orig-ctx", "",
     "not supported: the rope settings are the model file's"},
    {"--mirostat,--typical,--dynatemp-range,--xtc-probability,--dry-multiplier,--samplers", "",
     "not supported: tzero samples with --temp, --top-k, --top-p, --min-p and the penalties "
     "(include/tzero/sampling.h)"},
    {"-e,--escape,--no-escape", "",
     "not supported: the prompt is used as given (give escapes to the shell, or use -f FILE)"},
    {"--keep", "",
     "not supported: tzero does not shift the context; a full context ends the generation"},
    {"--no-display-prompt", "", "not needed: tzero run prints only the generated text"},
};

std::vector<std::string_view> split_commas(std::string_view s) {
  std::vector<std::string_view> out;
  while (!s.empty()) {
    const size_t comma = s.find(',');
    out.push_back(s.substr(0, comma));
    if (comma == std::string_view::npos) break;
    s.remove_prefix(comma + 1);
  }
  return out;
}

const LlamaFlag* find_flag(std::string_view name) {
  for (const LlamaFlag& f : kLlamaFlags)
    for (std::string_view s : split_commas(f.spellings))
      if (s == name) return &f;
  return nullptr;
}

// The first of the entry's tzero options that `sub` has, or "".
std::string target_in(const CLI::App& sub, const LlamaFlag& f) {
  for (std::string_view t : split_commas(f.tzero))
    if (sub.get_option_no_throw(std::string(t))) return std::string(t);
  return "";
}

std::string refusal(const CLI::App& app, const CLI::App& sub, std::string_view spelling,
                    const LlamaFlag& f) {
  const std::string cmd = command_path(sub);
  if (!f.otherwise.empty())
    return cmd + ": " + std::string(spelling) + ": " + std::string(f.otherwise);
  const std::string tzero(split_commas(f.tzero).front());
  std::string msg = cmd + ": " + std::string(spelling);
  if (spelling != tzero) msg += " (llama.cpp's spelling of " + tzero + ")";
  msg += " is not an option of tzero " + cmd;
  std::vector<std::string> have;
  for (const CLI::App* c : app.get_subcommands(std::function<bool(const CLI::App*)>{}))
    if (!target_in(*c, f).empty()) have.push_back("tzero " + c->get_name());
  if (have.empty()) return msg;
  std::string list;
  for (size_t i = 0; i < have.size(); ++i)
    list += (i == 0 ? "" : i + 1 == have.size() ? " and " : ", ") + have[i];
  return msg + " (" + list + (have.size() == 1 ? " has it)" : " have it)");
}

bool is_option_like(const std::string& t) {
  return t.size() > 1 && t[0] == '-';
}

}  // namespace

void rewrite_llama_flags(CLI::App& app, std::vector<std::string>& args) {
  CLI::App* cur = &app;
  for (size_t i = 0; i < args.size(); ++i) {
    std::string& t = args[i];
    if (t == "--") return;  // positional arguments only from here
    if (!is_option_like(t)) {
      for (CLI::App* sub : cur->get_subcommands(std::function<bool(CLI::App*)>{}))
        if (sub->check_name(t)) {
          cur = sub;
          break;
        }
      continue;
    }
    const size_t eq = t.rfind("--", 0) == 0 ? t.find('=') : std::string::npos;
    const std::string name = t.substr(0, eq);
    if (const CLI::Option* own = cur->get_option_no_throw(name)) {
      // Its values are not flags: step over them (an attached value needs no step).
      const bool attached = eq != std::string::npos || (name.rfind("--", 0) != 0 && t.size() > 2);
      if (!attached) i += size_t(std::max(0, own->get_items_expected_min()));
      continue;
    }
    if (cur == &app) continue;  // before the command: CLI11 reports it
    const LlamaFlag* f = find_flag(name);
    if (!f) continue;
    const std::string target = target_in(*cur, *f);
    if (target.empty()) throw Error(refusal(app, *cur, name, *f));
    t = target + (eq == std::string::npos ? "" : t.substr(eq));
  }
}

std::vector<LlamaAlias> llama_aliases_for(const CLI::App& sub) {
  std::vector<LlamaAlias> out;
  for (const LlamaFlag& f : kLlamaFlags) {
    const std::string target = target_in(sub, f);
    if (target.empty()) continue;
    for (std::string_view s : split_commas(f.spellings))
      if (!sub.get_option_no_throw(std::string(s))) out.push_back({std::string(s), target});
  }
  return out;
}

void add_llama_flag_footers(CLI::App& app) {
  for (CLI::App* sub : app.get_subcommands(std::function<bool(CLI::App*)>{})) {
    // "-ngl/--n-gpu-layers (--gpu-layers)": the spellings of one entry together.
    std::vector<std::pair<std::string, std::string>> groups;  // spellings, tzero option
    for (const LlamaAlias& a : llama_aliases_for(*sub)) {
      if (!groups.empty() && groups.back().second == a.tzero)
        groups.back().first += "/" + a.spelling;
      else
        groups.push_back({a.spelling, a.tzero});
    }
    std::string list;
    for (const auto& [spellings, tzero] : groups)
      list += (list.empty() ? "" : ", ") + spellings + " (" + tzero + ")";
    if (!list.empty()) sub->footer("llama.cpp's spellings accepted: " + list);
  }
}

}  // namespace tzero::cli
