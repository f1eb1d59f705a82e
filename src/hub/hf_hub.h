// Models from a Hugging Face repository (`tzero pull`, and `-m ORG/REPO:QUANT` wherever a model
// path goes), placed in the Hugging Face cache layout so that files other tools downloaded are
// found and reused, and the other way round:
//   HF_HUB_CACHE (default $HF_HOME/hub, else ~/.cache/huggingface/hub)
//     models--ORG--REPO/blobs/ETAG            the file (ETAG: its sha256 for LFS files)
//     models--ORG--REPO/refs/REVISION         the commit REVISION points to
//     models--ORG--REPO/snapshots/COMMIT/FILE a relative link to ../../blobs/ETAG
// The hub is HF_ENDPOINT (default https://huggingface.co); HF_TOKEN (or the token file
// huggingface_hub writes) authorizes gated repositories; HF_HUB_OFFLINE=1 uses the cache alone.
//
// A download resolves FILE at REVISION (HEAD /ORG/REPO/resolve/REVISION/FILE: X-Repo-Commit,
// X-Linked-Etag or ETag, X-Linked-Size or Content-Length, a redirect to the file's store),
// writes blobs/ETAG.incomplete, resumes it with an HTTP Range after a cut connection (a later
// run resumes it too), checks an LFS file's sha256 against its ETag before the file is used,
// then renames it into place and links the snapshot.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>

namespace tzero::hub {

struct HubRef {
  std::string repo;   // ORG/REPO
  std::string file;   // a file in it; "" to choose by quant
  std::string quant;  // e.g. Q4_K_M (case-insensitive); "" with a file
  std::string revision = "main";
};

// "ORG/REPO:QUANT" or "ORG/REPO" (quant Q4_K_M, llama.cpp's -hf default), as -m accepts them;
// nullopt for anything else (a local path).
std::optional<HubRef> parse_model_ref(const std::string& text);

struct HubSettings {
  std::string endpoint = "https://huggingface.co";
  std::string token;      // "" : none
  std::string cache_dir;  // HF_HUB_CACHE
  bool offline = false;
  static HubSettings from_environment();
};

struct PullEvents {
  std::function<void(const std::string&)> note;                 // a line for the user
  std::function<void(uint64_t done, uint64_t total)> progress;  // bytes of the file
};

// The local path of the file (the snapshot's link), downloading it when the cache lacks it.
// Throws tzero::Error naming the repository and file for every failure (not found, gated, a
// wrong hash, no such quant: with the quants the repository has).
std::string pull(const HubRef& ref, const HubSettings& settings, const PullEvents& events);

// Where a model path goes (-m, --draft-model, Python's LLM(model)): the value itself when it is
// a path (it exists, or its folder does, or it names a file), else, when it reads as
// ORG/REPO[:QUANT], the cached file's path (downloaded when missing, from the environment's
// hub settings). Throws tzero::Error as pull() does.
std::string model_path_or_pull(const std::string& value, const PullEvents& events);

// The hex sha256 of a file (OpenSSL's libcrypto).
std::string sha256_file(const std::string& path);

}  // namespace tzero::hub
