// hub/hf_hub.h
#include "hub/hf_hub.h"

#include <fcntl.h>
#include <httplib.h>
#include <openssl/evp.h>
#include <sys/file.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <memory>
#include <nlohmann/json.hpp>
#include <regex>
#include <vector>

#include "base/error.h"
#include "base/excerpt.h"

namespace fs = std::filesystem;

namespace tzero::hub {

namespace {

std::string env(const char* name) {
  const char* v = std::getenv(name);
  return v ? v : "";
}

std::string home_cache() {
  const std::string xdg = env("XDG_CACHE_HOME");
  return (xdg.empty() ? env("HOME") + "/.cache" : xdg) + "/huggingface";
}

std::string lower(std::string s) {
  for (char& c : s) c = char(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

std::string trim(std::string s) {
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.pop_back();
  size_t i = 0;
  while (i < s.size() && std::isspace(static_cast<unsigned char>(s[i]))) ++i;
  return s.substr(i);
}

// An ETag as huggingface_hub keeps it: no weak prefix, no quotes.
std::string normalize_etag(std::string e) {
  if (e.rfind("W/", 0) == 0) e = e.substr(2);
  if (e.size() >= 2 && e.front() == '"' && e.back() == '"') e = e.substr(1, e.size() - 2);
  return e;
}

// A name that may be one component of a path in the cache: not empty, not . or .., only
// letters, digits, '.', '_' and '-' (a hub's commit or ETag, a mirror's included).
bool safe_component(const std::string& s) {
  if (s.empty() || s == "." || s == "..") return false;
  return std::all_of(s.begin(), s.end(), [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || c == '.' || c == '_' || c == '-';
  });
}

// A relative path of safe-ish components (a file in a repository, a revision such as
// refs/pr/1): no empty, . or .. component, not absolute, no backslash or control byte.
bool safe_relative_path(const std::string& p) {
  if (p.empty() || p[0] == '/' || p.size() > 1024) return false;
  size_t start = 0;
  for (;;) {
    const size_t slash = p.find('/', start);
    const std::string part = p.substr(start, slash == std::string::npos ? slash : slash - start);
    if (part.empty() || part == "." || part == "..") return false;
    for (const char c : part)
      if (c == '\\' || static_cast<unsigned char>(c) < 0x20 || c == 0x7f) return false;
    if (slash == std::string::npos) return true;
    start = slash + 1;
  }
}

bool is_sha256(const std::string& s) {
  return s.size() == 64 && std::all_of(s.begin(), s.end(), [](char c) {
           return std::isdigit(static_cast<unsigned char>(c)) || (c >= 'a' && c <= 'f');
         });
}

struct Url {
  std::string origin, path;  // origin: scheme://host[:port]; path: from the first '/'
};

Url split_url(const std::string& url) {
  const size_t scheme = url.find("://");
  const size_t slash = url.find('/', scheme == std::string::npos ? 0 : scheme + 3);
  if (slash == std::string::npos) return {url, "/"};
  return {url.substr(0, slash), url.substr(slash)};
}

std::unique_ptr<httplib::Client> client_for(const std::string& origin) {
  auto c = std::make_unique<httplib::Client>(origin);
  c->set_connection_timeout(15);
  c->set_read_timeout(60);
  c->set_follow_location(false);
  return c;
}

std::string mib(uint64_t bytes) {
  char b[32];
  std::snprintf(b, sizeof b, "%.1f MiB", double(bytes) / 1048576.0);
  return b;
}

class Hub {
 public:
  Hub(const HubRef& ref, const HubSettings& s, const PullEvents& ev)
      : ref_(ref), s_(s), ev_(ev), base_(split_url(s.endpoint)) {
    repo_dir_ = s.cache_dir + "/models--" + std::regex_replace(ref.repo, std::regex("/"), "--");
  }

  std::string pull() {
    std::string file = ref_.file;
    if (file.empty()) file = choose_file();
    return pull_file(file);
  }

 private:
  httplib::Headers auth() const {
    httplib::Headers h = {{"User-Agent", "tzero/" TZ_VERSION}, {"Accept-Encoding", "identity"}};
    if (!s_.token.empty()) h.emplace("Authorization", "Bearer " + s_.token);
    return h;
  }

  std::string where(const std::string& file) const {
    return ref_.repo + (file.empty() ? "" : "/" + file) +
           (ref_.revision == "main" ? "" : " at " + ref_.revision);
  }

  [[noreturn]] void http_error(const std::string& file, int status,
                               const httplib::Headers& h) const {
    const std::string code = h.count("X-Error-Code") ? h.find("X-Error-Code")->second : "";
    if (status == 401 || status == 403)
      throw Error(where(file) + ": access refused (HTTP " + std::to_string(status) +
                  "): a gated or private repository needs HF_TOKEN set to a token with access " +
                  "(" + (s_.token.empty() ? "none is set" : "the one set has none") + ")");
    if (status == 404)
      throw Error(where(file) + ": not found (" + (code.empty() ? std::string("HTTP 404") : code) +
                  ") on " + s_.endpoint);
    throw Error(where(file) + ": the hub answered HTTP " + std::to_string(status));
  }

  // The commit the revision points to, from the cache (refs/REV), or the revision itself
  // when it is a commit hash.
  std::string cached_commit() const {
    std::ifstream f(repo_dir_ + "/refs/" + ref_.revision);
    std::string c;
    if (f && std::getline(f, c)) return trim(c);
    if (std::regex_match(ref_.revision, std::regex("[0-9a-f]{40}"))) return ref_.revision;
    return "";
  }

  std::vector<std::string> cached_files() const {
    std::vector<std::string> out;
    const std::string commit = cached_commit();
    std::error_code ec;
    const fs::path snap = repo_dir_ + "/snapshots/" + commit;
    if (commit.empty() || !fs::is_directory(snap, ec)) return out;
    for (const auto& e : fs::recursive_directory_iterator(snap, ec))
      if (!e.is_directory()) out.push_back(fs::relative(e.path(), snap).string());
    return out;
  }

  std::vector<std::string> remote_files() const {
    auto c = client_for(base_.origin);
    const std::string path = (base_.path == "/" ? "" : base_.path) + "/api/models/" + ref_.repo +
                             "/revision/" + ref_.revision;
    const auto r = c->Get(path, auth());
    if (!r)
      throw Error(where("") + ": cannot reach " + s_.endpoint + " (" +
                  httplib::to_string(r.error()) + ")");
    if (r->status != 200) http_error("", r->status, r->headers);
    std::vector<std::string> out;
    try {
      const nlohmann::json info = nlohmann::json::parse(r->body);
      for (const auto& sib : info.at("siblings"))
        out.push_back(sib.at("rfilename").get<std::string>());
    } catch (const std::exception& e) {
      throw Error(where("") + ": the hub's file list is not what was expected (" + e.what() + ")");
    }
    return out;
  }

  // The GGUF file of the quant: its name holds the quant as a whole word (Q4_K matches
  // x-Q4_K.gguf, not x-Q4_K_M.gguf), mmproj files left out.
  std::string choose_file() const {
    std::vector<std::string> files;
    if (s_.offline) {
      files = cached_files();
    } else {
      files = remote_files();
    }
    std::vector<std::string> ggufs, matches;
    const std::string q = lower(ref_.quant);
    for (const std::string& f : files) {
      const std::string l = lower(f);
      if (l.size() < 5 || l.compare(l.size() - 5, 5, ".gguf") != 0 ||
          l.find("mmproj") != std::string::npos)
        continue;
      ggufs.push_back(f);
      for (size_t at = l.find(q); at != std::string::npos; at = l.find(q, at + 1)) {
        auto word = [&](size_t i) {
          return i < l.size() && (std::isalnum(static_cast<unsigned char>(l[i])) || l[i] == '_');
        };
        if ((at == 0 || !word(at - 1)) && !word(at + q.size())) {
          matches.push_back(f);
          break;
        }
      }
    }
    if (matches.empty()) {
      std::string have;
      for (const std::string& g : ggufs) have += (have.empty() ? "" : ", ") + g;
      throw Error(where("") + ": no GGUF file for quant " + ref_.quant +
                  (ggufs.empty() ? std::string(" (the repository has no GGUF file") +
                                       (s_.offline ? " in the cache)" : ")")
                                 : " (it has: " + excerpt(have) + ")") +
                  "; name one: tzero pull " + ref_.repo + " FILE.gguf");
    }
    std::sort(matches.begin(), matches.end());
    if (std::regex_search(matches[0], std::regex("-\\d{5}-of-\\d{5}\\.gguf$")))
      throw Error(where(matches[0]) +
                  ": a split GGUF file; tzero reads one file: merge the parts with llama.cpp's "
                  "llama-gguf-split --merge, or choose another quant");
    return matches[0];
  }

  std::string snapshot_path(const std::string& commit, const std::string& file) const {
    return repo_dir_ + "/snapshots/" + commit + "/" + file;
  }

  std::string use_cached(const std::string& file, const std::string& why) const {
    const std::string commit = cached_commit();
    const std::string p = commit.empty() ? "" : snapshot_path(commit, file);
    std::error_code ec;
    if (p.empty() || !fs::exists(p, ec))
      throw Error(where(file) + ": " + why + ", and the cache (" + s_.cache_dir + ") has no copy");
    if (ev_.note) ev_.note(why + ": using the cached copy (commit " + commit.substr(0, 12) + ")");
    return p;
  }

  std::string pull_file(const std::string& file) {
    if (!safe_relative_path(file))
      throw Error(ref_.repo + ": '" + excerpt(file) + "' is not a file name in a repository");
    if (!safe_relative_path(ref_.revision))
      throw Error(ref_.repo + ": '" + excerpt(ref_.revision) + "' is not a revision");
    if (s_.offline) return use_cached(file, "HF_HUB_OFFLINE is set");
    // Metadata: HEAD without following the store's redirect (relative redirects followed).
    std::string url_path = (base_.path == "/" ? "" : base_.path) + "/" + ref_.repo + "/resolve/" +
                           ref_.revision + "/" + file;
    auto c = client_for(base_.origin);
    httplib::Result r = c->Head(url_path, auth());
    for (int hops = 0; r && r->status >= 300 && r->status < 400 && hops < 5; ++hops) {
      const std::string loc = r->get_header_value("Location");
      if (loc.empty() || loc[0] != '/') break;
      url_path = loc;
      r = c->Head(url_path, auth());
    }
    if (!r)
      return use_cached(file,
                        "cannot reach " + s_.endpoint + " (" + httplib::to_string(r.error()) + ")");
    if (r->status >= 400) http_error(file, r->status, r->headers);
    const std::string commit = r->get_header_value("X-Repo-Commit");
    std::string etag =
        normalize_etag(r->has_header("X-Linked-Etag") ? r->get_header_value("X-Linked-Etag")
                                                      : r->get_header_value("ETag"));
    const std::string size_s = r->has_header("X-Linked-Size")
                                   ? r->get_header_value("X-Linked-Size")
                                   : r->get_header_value("Content-Length");
    if (!safe_component(commit) || !safe_component(etag))
      throw Error(where(file) +
                  ": the hub did not say which commit and blob this is "
                  "(X-Repo-Commit, ETag): is " +
                  s_.endpoint + " a Hugging Face hub?");
    uint64_t size = 0;
    try {
      size = size_s.empty() ? 0 : std::stoull(size_s);
    } catch (const std::exception&) {
      size = 0;
    }
    std::string download = base_.origin + url_path;
    if (r->status >= 300 && r->status < 400 && !r->get_header_value("Location").empty())
      download = r->get_header_value("Location");

    fs::create_directories(repo_dir_ + "/blobs");
    const std::string blob = repo_dir_ + "/blobs/" + etag;
    std::error_code ec;
    if (!fs::exists(blob, ec)) fetch(file, download, blob, size, etag);
    // The snapshot's link, relative (../../blobs/ETAG, one more ../ per folder in FILE).
    const std::string snap = snapshot_path(commit, file);
    fs::create_directories(fs::path(snap).parent_path());
    fs::remove(snap, ec);
    fs::create_symlink(fs::relative(blob, fs::path(snap).parent_path()), snap);
    if (ref_.revision != commit) {
      fs::create_directories(repo_dir_ + "/refs");
      std::ofstream(repo_dir_ + "/refs/" + ref_.revision) << commit;
    }
    return snap;
  }

  // Downloads into BLOB.incomplete (resumed from what it holds), checks, renames.
  void fetch(const std::string& file, const std::string& url, const std::string& blob,
             uint64_t size, const std::string& etag) {
    const std::string part = blob + ".incomplete";
    // One download of a blob at a time, across processes (huggingface_hub locks the same way).
    const int lock_fd = open((blob + ".lock").c_str(), O_CREAT | O_RDWR | O_CLOEXEC, 0644);
    if (lock_fd < 0) throw Error(blob + ".lock: cannot create");
    std::unique_ptr<int, void (*)(int*)> unlock(new int(lock_fd), [](int* fd) {
      close(*fd);
      delete fd;
    });
    if (flock(lock_fd, LOCK_EX) != 0) throw Error(blob + ".lock: cannot lock");
    std::error_code ec;
    if (fs::exists(blob, ec)) return;  // another process finished it meanwhile
    for (int attempt = 0;; ++attempt) {
      uint64_t have = fs::exists(part, ec) ? fs::file_size(part, ec) : 0;
      // Not this blob's beginning, or of unknown length (nothing to resume against).
      if ((size > 0 && have > size) || (size == 0 && have > 0)) {
        fs::remove(part, ec);
        have = 0;
      }
      if (size == 0 || have < size) {
        if (have > 0 && ev_.note) ev_.note(file + ": resuming at " + mib(have));
        std::FILE* out = std::fopen(part.c_str(), have > 0 ? "ab" : "wb");
        if (!out) throw Error(part + ": cannot write");
        std::unique_ptr<std::FILE, int (*)(std::FILE*)> closer(out, std::fclose);
        int status = 0;
        uint64_t done = have;
        bool write_failed = false;
        std::string location;
        // Redirects followed here: the token goes to the hub's origin only, never to a store.
        httplib::Result r{nullptr, httplib::Error::Unknown};
        for (int hops = 0; hops < 6; ++hops) {
          const Url u = split_url(location.empty() ? url : location);
          httplib::Headers h =
              u.origin == base_.origin ? auth() : httplib::Headers{{"User-Agent", "tzero"}};
          if (have > 0) h.emplace("Range", "bytes=" + std::to_string(have) + "-");
          auto c = client_for(u.origin);
          std::string next;
          r = c->Get(
              u.path, h,
              [&](const httplib::Response& resp) {
                status = resp.status;
                if (status >= 300 && status < 400) {
                  next = resp.get_header_value("Location");
                  if (!next.empty() && next[0] == '/') next = u.origin + next;
                  return false;
                }
                if (status == 200 && have > 0) {  // the Range was ignored: start over
                  std::fflush(out);
                  if (ftruncate(fileno(out), 0) != 0) return false;
                  std::fseek(out, 0, SEEK_SET);
                  done = 0;
                }
                return status == 200 || status == 206;
              },
              [&](const char* data, size_t n) {
                if (std::fwrite(data, 1, n, out) != n) {
                  write_failed = true;
                  return false;
                }
                done += n;
                if (ev_.progress) ev_.progress(done, size);
                return true;
              });
          if (next.empty()) break;
          location = next;
        }
        closer.reset();
        if (status >= 300 && status < 400)
          throw Error(where(file) + ": too many redirects (or one without a Location)");
        if (write_failed) throw Error(part + ": write failed (disk full?)");
        if (status >= 400) http_error(file, status, r ? r->headers : httplib::Headers{});
        if (!r || (size > 0 && fs::file_size(part, ec) < size)) {
          if (attempt < 5) {
            if (ev_.note)
              ev_.note(file + ": the connection was cut at " + mib(fs::file_size(part, ec)) +
                       (r ? "" : " (" + httplib::to_string(r.error()) + ")") + "; resuming");
            continue;
          }
          throw Error(where(file) +
                      ": the download kept failing; run the same command again to "
                      "resume it (" +
                      part + " keeps what arrived)");
        }
      }
      if (size > 0 && fs::file_size(part, ec) != size) {
        const uint64_t held = fs::file_size(part, ec);
        fs::remove(part, ec);
        throw Error(where(file) + ": the download holds " + std::to_string(held) +
                    " bytes, the hub says " + std::to_string(size) + ": deleted it; run again");
      }
      if (is_sha256(etag)) {
        if (ev_.note) ev_.note(file + ": checking its sha256");
        const std::string got = sha256_file(part);
        if (got != etag) {
          fs::remove(part, ec);
          throw Error(where(file) + ": the download's sha256 is " + got + ", the hub's " + etag +
                      ": the file is damaged and was deleted; run again");
        }
      }
      fs::rename(part, blob);
      return;
    }
  }

  HubRef ref_;
  HubSettings s_;
  PullEvents ev_;
  Url base_;
  std::string repo_dir_;
};

}  // namespace

std::optional<HubRef> parse_model_ref(const std::string& text) {
  static const std::regex re("([A-Za-z0-9][A-Za-z0-9_.-]*/[A-Za-z0-9_.-]+)(?::([A-Za-z0-9_.-]+))?");
  std::smatch m;
  if (!std::regex_match(text, m, re)) return std::nullopt;
  const std::string l = lower(text);
  for (const char* ext : {".gguf", ".bin", ".safetensors", ".json"})
    if (l.size() >= std::strlen(ext) &&
        l.compare(l.size() - std::strlen(ext), std::string::npos, ext) == 0)
      return std::nullopt;  // a file name, not a repository
  HubRef r;
  r.repo = m[1];
  r.quant = m[2].matched ? std::string(m[2]) : "Q4_K_M";
  return r;
}

HubSettings HubSettings::from_environment() {
  HubSettings s;
  if (!env("HF_ENDPOINT").empty()) s.endpoint = env("HF_ENDPOINT");
  while (!s.endpoint.empty() && s.endpoint.back() == '/') s.endpoint.pop_back();
  const std::string hf_home = env("HF_HOME").empty() ? home_cache() : env("HF_HOME");
  s.cache_dir = !env("HF_HUB_CACHE").empty()            ? env("HF_HUB_CACHE")
                : !env("HUGGINGFACE_HUB_CACHE").empty() ? env("HUGGINGFACE_HUB_CACHE")
                                                        : hf_home + "/hub";
  s.token = env("HF_TOKEN");
  if (s.token.empty()) s.token = env("HUGGING_FACE_HUB_TOKEN");
  if (s.token.empty()) {
    std::ifstream f(env("HF_TOKEN_PATH").empty() ? hf_home + "/token" : env("HF_TOKEN_PATH"));
    if (f) std::getline(f, s.token);
    s.token = trim(s.token);
  }
  const std::string off = lower(env("HF_HUB_OFFLINE"));
  s.offline = off == "1" || off == "true" || off == "yes" || off == "on";
  return s;
}

std::string pull(const HubRef& ref, const HubSettings& settings, const PullEvents& events) {
  check(!settings.cache_dir.empty(), "no Hugging Face cache directory (set HF_HUB_CACHE)");
  return Hub(ref, settings, events).pull();
}

std::string model_path_or_pull(const std::string& value, const PullEvents& events) {
  std::error_code ec;
  if (fs::exists(value, ec) || fs::exists(value.substr(0, value.find('/')), ec)) return value;
  const std::optional<HubRef> ref = parse_model_ref(value);
  if (!ref) return value;
  return pull(*ref, HubSettings::from_environment(), events);
}

std::string sha256_file(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  if (!f) throw Error(path + ": cannot read");
  std::unique_ptr<EVP_MD_CTX, void (*)(EVP_MD_CTX*)> ctx(EVP_MD_CTX_new(), EVP_MD_CTX_free);
  check(ctx && EVP_DigestInit_ex(ctx.get(), EVP_sha256(), nullptr) == 1, "sha256: no context");
  std::vector<char> buf(1 << 20);
  while (f) {
    f.read(buf.data(), std::streamsize(buf.size()));
    if (f.gcount() > 0) EVP_DigestUpdate(ctx.get(), buf.data(), size_t(f.gcount()));
  }
  unsigned char md[EVP_MAX_MD_SIZE];
  unsigned int n = 0;
  EVP_DigestFinal_ex(ctx.get(), md, &n);
  static const char* hex = "0123456789abcdef";
  std::string out;
  for (unsigned int i = 0; i < n; ++i) {
    out += hex[md[i] >> 4];
    out += hex[md[i] & 15];
  }
  return out;
}

}  // namespace tzero::hub
