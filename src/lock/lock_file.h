// The lock file (docs/LOCK.md): what a prompt set produced, and everything needed to say later
// whether a rerun gives the same bits and, if not, what changed. JSON, versioned:
//
//   {"tzero_lock": 1,
//    "source": {"kind": "local", "model": PATH, "ctx": N, "kernels": K, "mode": M,
//               "kv_type": T, "threads": N, "chat_template": NAME}
//            | {"kind": "server", "base_url": URL, "model_name": NAME},
//    "fingerprint": HASH, "manifest": {...},      (runtime/fingerprint.h; a server: {})
//    "environment": {...},                        (lock/environment.h)
//    "prompt_set": PATH,
//    "requests": [
//   {"id": ID, "line": N, "endpoint": "completions" | "chat", "request": {BODY},
//    "result": {"text", "finish_reason", ["tokens"], ["logits_digest"], ["stop_reason"],
//               ["n_prompt"], ["logprobs"]}},        (one request per line)
//   ...
//   ]}
//
// A result holds what the source could give: a local run everything; a tzero server the text
// and the "tzero" field's digest and stop reason; another server the text and, if asked for
// and offered, the logprobs (as the server wrote them).
//
// read_lock_file() refuses a file that is not JSON (truncated, damaged), is not a lock, is of a
// newer version, or has a field of the wrong type, with a tzero::Error "FILE:LINE: what"
// (exit 2). Each request is written on a line of its own, so a bad request names its line.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "lock/prompt_set.h"

namespace tzero::lock {

constexpr int kLockVersion = 1;

// The engine flags of a local run (those `tzero serve` takes).
struct EngineConfig {
  std::string model;
  int ctx = 0;
  std::string kernels = "auto";
  std::string mode = "deterministic";
  std::string kv_type = "f32";
  int threads = 1;
  std::string chat_template;  // a named format, "" for the model's own
  bool use_mmap = true;       // this run's (--no-mmap), never recorded: it changes no bit
  std::vector<std::string> op_overrides;  // serve's --op (the canary), in the manifest's custom_ops
};

struct LockResult {
  // text: as a JSON response carries it (bytes that are not UTF-8 replaced by U+FFFD, as the
  // server writes them); the token ids and the digest are exact.
  std::string text, finish_reason;
  std::optional<std::vector<int32_t>> tokens;        // generated token ids, the stop token included
  std::string logits_digest;                         // "" when the source gave none
  std::string stop_reason;                           // "" when the source gave none
  int n_prompt = -1;                                 // prompt tokens; -1 when unknown
  std::optional<std::vector<std::string>> logprobs;  // the sampled tokens', as written
};

struct LockEntry {
  LockRequest request;
  LockResult result;
};

struct LockFile {
  int version = kLockVersion;
  std::string kind = "local";        // or "server"
  EngineConfig engine;               // kind local
  std::string base_url, model_name;  // kind server
  std::string fingerprint;
  nlohmann::json manifest = nlohmann::json::object();
  nlohmann::json environment = nlohmann::json::object();
  std::string prompt_set;
  std::vector<LockEntry> entries;
};

nlohmann::json result_json(const LockResult& r);
nlohmann::json config_json(const EngineConfig& c);

// The file's text: the header fields, then one request per line.
std::string lock_text(const LockFile& lock);
// Writes it through a temporary file and a rename (never a half-written lock). Throws
// tzero::Error.
void write_lock_file(const std::string& path, const LockFile& lock);
// Throws tzero::Error "PATH:LINE: ..." for anything but a whole, valid lock of version <= 1.
LockFile read_lock_file(const std::string& path);
LockFile parse_lock_text(const std::string& text, const std::string& path);

// Writes text to path through PATH.tmp and a rename. Throws tzero::Error.
void write_file_atomic(const std::string& path, const std::string& text);

}  // namespace tzero::lock
