// The edge spellings of the public enums (include/tzero/types.h).
#include "tzero/types.h"

namespace tzero {

FinishReason finish_reason_of(StopReason r) {
  switch (r) {
    case StopReason::none:
      return FinishReason::none;
    case StopReason::eos:
    case StopReason::eot:
    case StopReason::stop_token:
    case StopReason::stop_string:
      return FinishReason::stop;
    case StopReason::max_tokens:
    case StopReason::context:
      return FinishReason::length;
    case StopReason::cancelled:
      return FinishReason::cancelled;
    case StopReason::grammar_dead_end:
      return FinishReason::grammar_dead_end;
    case StopReason::grammar_budget:
      return FinishReason::grammar_budget;
  }
  return FinishReason::none;
}

const char* to_string(Mode m) {
  switch (m) {
    case Mode::deterministic:
      return "deterministic";
    case Mode::fast:
      return "fast";
    case Mode::portable:
      return "portable";
  }
  return "?";
}

const char* to_string(StopReason r) {
  switch (r) {
    case StopReason::none:
      return "";
    case StopReason::eos:
      return "eos";
    case StopReason::eot:
      return "eot";
    case StopReason::stop_token:
      return "stop_token";
    case StopReason::stop_string:
      return "stop_string";
    case StopReason::max_tokens:
      return "length";
    case StopReason::context:
      return "context";
    case StopReason::cancelled:
      return "cancelled";
    case StopReason::grammar_dead_end:
      return "grammar_dead_end";
    case StopReason::grammar_budget:
      return "grammar_budget";
  }
  return "?";
}

const char* to_string(FinishReason r) {
  switch (r) {
    case FinishReason::none:
      return "";
    case FinishReason::stop:
      return "stop";
    case FinishReason::length:
      return "length";
    case FinishReason::cancelled:
      return "cancelled";
    case FinishReason::grammar_dead_end:
      return "grammar_dead_end";
    case FinishReason::grammar_budget:
      return "grammar_budget";
  }
  return "?";
}

const char* to_string(RequestErrorKind k) {
  switch (k) {
    case RequestErrorKind::invalid_value:
      return "invalid_value";
    case RequestErrorKind::invalid_token:
      return "invalid_token";
    case RequestErrorKind::empty_prompt:
      return "empty_prompt";
    case RequestErrorKind::context_length_exceeded:
      return "context_length_exceeded";
    case RequestErrorKind::chat_template:
      return "chat_template";
    case RequestErrorKind::grammar_budget:
      return "grammar_budget";
    case RequestErrorKind::invalid_grammar:
      return "invalid_grammar";
  }
  return "?";
}

const char* to_string(Pooling p) {
  switch (p) {
    case Pooling::none:
      return "none";
    case Pooling::model:
      return "model";
    case Pooling::mean:
      return "mean";
    case Pooling::cls:
      return "cls";
    case Pooling::last:
      return "last";
  }
  return "?";
}

std::optional<Pooling> parse_pooling(std::string_view s) {
  for (Pooling p : {Pooling::none, Pooling::model, Pooling::mean, Pooling::cls, Pooling::last})
    if (s == to_string(p)) return p;
  return std::nullopt;
}

std::optional<Mode> parse_mode(std::string_view s) {
  for (Mode m : {Mode::deterministic, Mode::fast, Mode::portable})
    if (s == to_string(m)) return m;
  return std::nullopt;
}

}  // namespace tzero
