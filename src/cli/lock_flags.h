// The flags `tzero lock` and `tzero verify` share: the engine flags of `tzero serve` (-m, -c,
// --kernels, --mode, --kv-type, -t, --chat-template) or a server (--base-url, --api-key,
// --model-name, --timeout). verify takes a flag's value when given, the lock's otherwise, so it
// needs the Option pointers to know which were given.
#pragma once

#include <CLI/CLI.hpp>

#include "lock/lock_file.h"
#include "lock/runner.h"

namespace tzero::cli {

struct LockFlags {
  lock::EngineConfig engine;
  lock::ServerConfig server;
  CLI::Option *model = nullptr, *ctx = nullptr, *kernels = nullptr, *mode = nullptr,
              *kv_type = nullptr, *threads = nullptr, *chat_template = nullptr;
};

void add_lock_flags(CLI::App* sub, LockFlags& f);

// The engine configuration: the lock's (base, when given) with every flag given on top; the
// thread count is always this run's.
lock::EngineConfig merged_engine(const LockFlags& f, const lock::EngineConfig* base);

}  // namespace tzero::cli
