// tzero info: print a GGUF file's metadata and tensors (keys and names cut to 200 bytes, control
// bytes escaped: they come from the file).
#include <cstdio>
#include <memory>

#include "base/excerpt.h"
#include "cli/commands.h"
#include "format/gguf.h"

namespace tzero::cli {

Command add_info(CLI::App& app) {
  auto* sub = app.add_subcommand("info", "Print a GGUF file's metadata and tensors");
  auto model = std::make_shared<std::string>();
  auto all = std::make_shared<bool>(false);
  sub->add_option("-m,--model", *model, "GGUF file")->required();
  sub->add_flag("--all", *all, "Show every element of long arrays' first items (up to 64)");
  return {sub, [model, all] {
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
            return 0;
          }};
}

}  // namespace tzero::cli
