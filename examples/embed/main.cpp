// A program that embeds the tzero engine (include/tzero/engine.h): it generates a few tokens
// from a model and prints them, then the logits digest (the same one `tzero run` prints for
// the same model, prompt and token count). Built against an installed tzero (CMakeLists.txt).
//   tzero_embed MODEL.gguf [PROMPT] [N_TOKENS]
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <string>

#include "tzero/engine.h"

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: %s MODEL.gguf [PROMPT] [N_TOKENS]\n", argv[0]);
    return 2;
  }
  try {
    tzero::EngineOptions options;
    options.model_path = argv[1];
    options.n_threads = 2;  // any thread count gives the same bits
    tzero::Engine engine(options);

    tzero::RequestParams request;
    request.prompt = argc > 2 ? argv[2] : "Once upon a time";
    request.max_tokens = argc > 3 ? std::atoi(argv[3]) : 8;
    tzero::TokenEvent last;
    engine.submit(request, [&](const tzero::TokenEvent& e) {
      std::fputs(e.text.c_str(), stdout);
      if (e.finished) last = e;
    });
    engine.run_until_idle();
    std::printf("\n%d tokens (%s), logits digest %s\n", last.n_generated,
                tzero::to_string(last.finish_reason), last.logits_digest.c_str());
    return 0;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "tzero_embed: %s\n", e.what());
    return 2;
  }
}
