// One-line messages for command-line mistakes (cli/usage_errors.h).
#include "cli/usage_errors.h"

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <regex>

#include "cli/llama_flags.h"

namespace tzero::cli {

namespace {

// The parsed commands, outermost first: tzero, then run (or demo, then axpy).
std::vector<const CLI::App*> parsed_chain(const CLI::App& app) {
  std::vector<const CLI::App*> chain{&app};
  for (;;) {
    const std::vector<CLI::App*> subs = chain.back()->get_subcommands();
    if (subs.empty()) return chain;
    chain.push_back(subs.front());
  }
}

// "-m/--model" for an option, "the PROMPTS argument" for a positional one.
std::string display_name(const CLI::Option& opt) {
  if (!opt.nonpositional()) {
    std::string n = opt.get_name();
    std::transform(n.begin(), n.end(), n.begin(), [](unsigned char c) { return std::toupper(c); });
    return "the " + n + " argument";
  }
  std::string n = opt.get_name(false, true);
  std::replace(n.begin(), n.end(), ',', '/');
  return n;
}

bool is_option_like(const std::string& t) {
  return t.size() > 1 && t[0] == '-' && !std::isdigit(static_cast<unsigned char>(t[1])) &&
         t[1] != '.';
}

size_t edit_distance(const std::string& a, const std::string& b) {
  std::vector<size_t> row(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    size_t diag = row[0];
    row[0] = i;
    for (size_t j = 1; j <= b.size(); ++j) {
      const size_t up = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diag + (a[i - 1] == b[j - 1] ? 0 : 1)});
      diag = up;
    }
  }
  return row[b.size()];
}

std::string strip_dashes(const std::string& s) {
  const size_t n = s.find_first_not_of('-');
  return n == std::string::npos ? "" : s.substr(n);
}

std::string join(const std::vector<std::string>& v) {
  std::string out;
  for (const std::string& s : v) out += (out.empty() ? "" : ", ") + s;
  return out;
}

std::vector<std::string> command_names(const CLI::App& app) {
  std::vector<std::string> names;
  for (const CLI::App* c : app.get_subcommands(std::function<bool(const CLI::App*)>{}))
    names.push_back(c->get_name());
  return names;
}

// An unknown option of `cmd`, with the closest real spelling (its own or a llama.cpp alias).
std::string unknown_option(const CLI::App& cmd, const std::string& item) {
  const std::string name = item.substr(0, item.rfind("--", 0) == 0 ? item.find('=') : item.size());
  std::vector<std::string> candidates, targets;
  for (const CLI::Option* opt : cmd.get_options()) {
    if (!opt->nonpositional()) continue;
    for (const std::string& l : opt->get_lnames()) candidates.push_back("--" + l);
    for (const std::string& s : opt->get_snames()) candidates.push_back("-" + s);
  }
  targets = candidates;
  for (const LlamaAlias& a : llama_aliases_for(cmd)) {
    candidates.push_back(a.spelling);
    targets.push_back(a.tzero);
  }
  std::string hint;
  const std::string best = closest_name(name, candidates);
  if (!best.empty()) {
    const size_t i =
        size_t(std::find(candidates.begin(), candidates.end(), best) - candidates.begin());
    hint = "; did you mean " + targets[i] + "?";
  }
  if (cmd.get_parent() == nullptr) {
    // "tzero -m x -p hi": the first command that has the option, as the example.
    std::string example = "COMMAND";
    for (const CLI::App* c : cmd.get_subcommands(std::function<bool(const CLI::App*)>{}))
      if (c->get_option_no_throw(name)) {
        example = c->get_name();
        break;
      }
    return "unknown option " + name + " (options follow a command: tzero " + example + " " + name +
           " ...; tzero --help lists the commands)";
  }
  const std::string path = command_path(cmd);
  return path + ": unknown option " + name +
         (hint.empty() ? " (tzero " + path + " --help lists the options)" : hint);
}

std::string unknown_argument(const CLI::App& cmd, const std::string& item) {
  if (cmd.get_parent() == nullptr) {
    if (item == "help") return "unknown command 'help': tzero --help lists the commands";
    const std::string best = closest_name(item, command_names(cmd));
    return "unknown command '" + item + "'" +
           (best.empty() ? " (commands: " + join(command_names(cmd)) + ")"
                         : "; did you mean " + best + "?");
  }
  const std::string path = command_path(cmd);
  return path + ": unexpected argument '" + item + "' (tzero " + path + " --help)";
}

// "100.000000" -> "100", "0.500000" -> "0.5" (CLI11 prints a double's range with %f).
std::string tidy_number(std::string n) {
  if (n.find('.') == std::string::npos || n.find_first_not_of("-+0123456789.") != std::string::npos)
    return n;
  while (n.back() == '0') n.pop_back();
  if (n.back() == '.') n.pop_back();
  return n;
}

// CLI11's own wording of value errors, made plainer.
std::string reword(const CLI::App& cmd, const CLI::ParseError& e) {
  const std::string what = e.what();
  std::smatch m;
  auto option_of = [&](const std::string& name) -> const CLI::Option* {
    return cmd.get_option_no_throw(name);
  };
  if (std::regex_match(what, m, std::regex(R"(Could not convert: (\S+) = (.*))"))) {
    const CLI::Option* opt = option_of(m[1]);
    const std::string type = opt ? opt->get_type_name() : "";
    const std::string want = type == "INT" || type == "UINT" ? "an integer"
                             : type == "FLOAT"               ? "a number"
                                                             : "a valid value";
    return m[1].str() + ": '" + m[2].str() + "' is not " + want;
  }
  if (std::regex_match(what, m, std::regex(R"((\S+): Value (.*) not in range (.*) to (.*))"))) {
    // CLI11's range check sees the text before it is converted: "abc" gets here too.
    const std::string v = m[2];
    char* end = nullptr;
    std::strtod(v.c_str(), &end);
    const bool number = !v.empty() && end && *end == 0;
    return m[1].str() + ": '" + v + "' is not " + (number ? "in the range " : "a number from ") +
           tidy_number(m[3]) + " to " + tidy_number(m[4]);
  }
  if (std::regex_match(what, m, std::regex(R"((\S+): (.*) not in \{(.*)\})"))) {
    std::string set = m[3];
    std::string list;
    for (char c : set) list += c == ',' ? std::string(", ") : std::string(1, c);
    return m[1].str() + ": '" + m[2].str() + "' is not one of " + list;
  }
  if (std::regex_match(what, m, std::regex(R"((\S+): \d+ required .* missing)")))
    return m[1].str() + " needs a value";
  if (std::regex_match(what, m, std::regex(R"((\S+): too many inputs for a flag)")))
    return m[1].str() + " is a flag: it takes no value";
  if (std::regex_match(what, m, std::regex(R"((\S+) excludes (\S+))")))
    return "give " + m[1].str() + " or " + m[2].str() + ", not both";
  return what;
}

}  // namespace

std::string command_path(const CLI::App& sub) {
  std::string path;
  for (const CLI::App* a = &sub; a && a->get_parent(); a = a->get_parent())
    path = a->get_name() + (path.empty() ? "" : " " + path);
  return path;
}

std::string closest_name(const std::string& name, const std::vector<std::string>& candidates) {
  const std::string bare = strip_dashes(name);
  if (bare.empty()) return "";
  std::string best;
  size_t best_d = std::string::npos;
  for (const std::string& c : candidates) {
    const std::string cb = strip_dashes(c);
    size_t d = edit_distance(bare, cb);
    // A prefix of a long name ("--gpu" for "--gpu-layers") is as good as one typo.
    if (bare.size() >= 3 && cb.rfind(bare, 0) == 0) d = std::min<size_t>(d, 1);
    if (d < best_d) best_d = d, best = c;
  }
  const size_t allowed = bare.size() <= 3 ? 1 : bare.size() <= 8 ? 2 : 3;
  return best_d <= allowed && best_d < bare.size() ? best : "";
}

std::string describe_parse_error(const CLI::App& app, const CLI::ParseError& e) {
  const std::vector<const CLI::App*> chain = parsed_chain(app);
  // Arguments CLI11 did not recognise, leftmost command first: an unknown command or option
  // before any other problem (CLI11 would name a missing --model first).
  for (const CLI::App* cmd : chain) {
    const std::vector<std::string> left = cmd->remaining(false);
    if (left.empty()) continue;
    if (cmd == &app) {
      // Before any command: the first item decides ("tzero foo", "tzero -m x"). After one
      // (an argument after "--" comes back to the top): the command's extra argument.
      if (chain.size() == 1 || is_option_like(left.front()))
        return is_option_like(left.front()) ? unknown_option(app, left.front())
                                            : unknown_argument(app, left.front());
      return unknown_argument(*chain.back(), left.front());
    }
    for (const std::string& item : left)
      if (is_option_like(item)) return unknown_option(*cmd, item);
    return unknown_argument(*cmd, left.front());
  }
  const CLI::App& last = *chain.back();
  const std::string prefix = chain.size() > 1 ? command_path(last) + ": " : "";
  if (e.get_name() == "RequiredError") {
    if (last.get_require_subcommand_min() > 0 && last.get_subcommands().empty()) {
      return chain.size() == 1 ? "give a command: " + join(command_names(app)) +
                                     " (tzero COMMAND --help says more)"
                               : prefix + "give a subcommand: " + join(command_names(last));
    }
    for (auto it = chain.rbegin(); it != chain.rend(); ++it)
      for (const CLI::Option* opt : (*it)->get_options())
        if (opt->get_required() && opt->count() == 0)
          return (it == chain.rbegin() ? prefix : "") + display_name(*opt) + " is required";
  }
  return prefix + reword(last, e);
}

}  // namespace tzero::cli
