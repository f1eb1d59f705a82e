#include "server/harmony.h"

#include <array>
#include <cctype>

#include "tzero/engine.h"

namespace tzero::server {

namespace {
constexpr std::array<std::string_view, 7> kMarkers = {"<|start|>",     "<|channel|>", "<|message|>",
                                                      "<|constrain|>", "<|end|>",     "<|call|>",
                                                      "<|return|>"};

// The word after `key` in the header ("" when absent): letters, digits, '.', '_' and '-'.
std::string word_after(const std::string& header, std::string_view key) {
  const size_t at = header.find(key);
  if (at == std::string::npos) return "";
  size_t i = at + key.size(), j = i;
  while (j < header.size() && (std::isalnum(static_cast<unsigned char>(header[j])) ||
                               header[j] == '.' || header[j] == '_' || header[j] == '-'))
    ++j;
  return header.substr(i, j - i);
}
}  // namespace

void HarmonySplitter::open_message() {
  any_message_ = true;
  in_header_ = false;
  const std::string recipient = word_after(header_, "to=");
  const std::string channel = word_after(header_, "<|channel|>");
  call_name_.clear();
  call_args_.clear();
  if (recipient.rfind("functions.", 0) == 0) {
    dest_ = Dest::call;
    call_name_ = recipient.substr(10);
  } else if (!recipient.empty()) {
    dest_ = Dest::drop;  // a built-in tool's message
  } else {
    dest_ = channel == "analysis" ? Dest::reasoning : Dest::content;
  }
  header_.clear();
}

void HarmonySplitter::close_message() {
  if (!in_header_ && dest_ == Dest::call) {
    calls_.push_back(ToolCall{id_prefix_ + std::to_string(n_calls_++), call_name_, call_args_});
    call_args_.clear();
  }
  in_header_ = true;
  header_.clear();
}

HarmonySplitter::Piece HarmonySplitter::push(std::string_view marker, const std::string& text) {
  Piece out;
  if (marker.empty()) {
    if (!any_message_) plain_ += text;
    if (in_header_) {
      header_ += text;
    } else if (dest_ == Dest::reasoning) {
      out.reasoning = text;
    } else if (dest_ == Dest::content) {
      out.content = text;
    } else if (dest_ == Dest::call) {
      call_args_ += text;
    }
    return out;
  }
  if (marker == "<|start|>") {
    close_message();
  } else if (marker == "<|channel|>") {
    if (!in_header_) close_message();
    header_ += "<|channel|>";
  } else if (marker == "<|constrain|>") {
    header_ += " <|constrain|>";
  } else if (marker == "<|message|>") {
    open_message();
  } else {  // <|end|>, <|call|>, <|return|>
    close_message();
  }
  return out;
}

HarmonySplitter::Piece HarmonySplitter::finish() {
  Piece out;
  if (!any_message_) out.content = plain_;  // no message opened: not harmony after all
  if (!in_header_ && dest_ == Dest::call) close_message();  // a call cut by max_tokens
  header_.clear();
  return out;
}

std::vector<ToolCall> HarmonySplitter::take() {
  std::vector<ToolCall> out = std::move(calls_);
  calls_.clear();
  return out;
}

bool is_harmony(const tzero::Engine& engine) {
  for (const char* name : {"<|channel|>", "<|message|>"}) {
    const auto ids = engine.tokenize(name, false, true);
    if (ids.size() != 1 || engine.token_text(ids[0]) != name) return false;
  }
  return true;
}

std::string harmony_marker(const tzero::Engine& engine, int32_t token) {
  const std::string t = engine.token_text(token);
  for (const std::string_view m : kMarkers)
    if (t == m) return t;
  return "";
}

}  // namespace tzero::server
