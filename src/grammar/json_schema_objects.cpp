// JSON Schema to GBNF: objects (properties in order, optional ones through a linear chain of
// rules, extra properties), arrays (prefixItems, items, counts) and allOf merging.
#include <algorithm>

#include "grammar/json_schema_converter.h"

namespace tzero::schema_detail {

// --- objects, arrays, allOf ---------------------------------------------------------------------

std::string Converter::object(const ordered_json& s, const std::string& where, int depth) {
  static const ordered_json kEmpty = ordered_json::object();
  const ordered_json& props = s.contains("properties") ? s["properties"] : kEmpty;
  if (!props.is_object())
    throw SchemaError(where + "/properties", "`properties` must be an object");
  std::set<std::string> required;
  if (s.contains("required")) {
    if (!s["required"].is_array())
      throw SchemaError(where + "/required", "`required` must be an array");
    for (const auto& r : s["required"]) {
      if (!r.is_string()) throw SchemaError(where + "/required", "`required` must hold strings");
      required.insert(r.get<std::string>());
    }
  }
  // The properties in order: the declared ones, then the required ones not declared (any value).
  struct Prop {
    std::string key, value;
    bool required;
  };
  std::vector<Prop> list;
  std::vector<std::string> declared;
  for (const auto& [key, sub] : props.items()) {
    declared.push_back(key);
    const std::string w = where + "/properties/" + pointer_escape(key);
    if (sub == false) {
      if (required.count(key)) throw SchemaError(w, "a required property whose schema is false");
      continue;
    }
    list.push_back({key, visit(sub, w, depth + 1), required.count(key) > 0});
  }
  for (const std::string& r : required)
    if (!props.contains(r)) {
      declared.push_back(r);
      list.push_back({r, use("value"), true});
    }
  // Extra properties: with additionalProperties true or a schema, or with no properties at all.
  std::string extra_value;
  if (s.contains("additionalProperties")) {
    const ordered_json& ap = s["additionalProperties"];
    if (ap != false) extra_value = visit(ap, where + "/additionalProperties", depth + 1);
  } else if (!s.contains("properties") && !s.contains("required")) {
    extra_value = use("value");
  }
  use("ws");
  std::string a_next, b_next;  // A(i): properties i.. with none written yet; B(i): after one
  if (!extra_value.empty()) {
    const std::string kv = extra_key(declared, where) + " ws \":\" ws " + extra_value + " ws";
    const std::string more = add(where + "-extra", "(\",\" ws " + kv + ")*");
    b_next = more;
    a_next = add(where + "-extras", "(" + kv + " " + more + ")?");
  }
  for (size_t i = list.size(); i-- > 0;) {
    const Prop& p = list[i];
    const std::string kv =
        gbnf_literal(ordered_json(p.key).dump()) + " ws \":\" ws " + p.value + " ws";
    const std::string tail = b_next.empty() ? "" : " " + b_next;
    const std::string b = add(where + "-b" + std::to_string(i),
                              (p.required ? "\",\" ws " + kv : "(\",\" ws " + kv + ")?") + tail);
    std::string a = kv + tail;
    if (!p.required) a = a_next.empty() ? "(" + a + ")?" : a + " | " + a_next;
    a_next = add(where + "-a" + std::to_string(i), a);
    b_next = b;
  }
  return add(where, "\"{\" ws " + (a_next.empty() ? "" : a_next + " ") + "\"}\"");
}

// A key of an extra property: a string of characters that need no escape (so its spelling is
// its value) and none of the declared names. A trie of the names: at each node, a character
// that leaves the trie and then anything, or one of its children, or the end unless a name ends.
std::string Converter::extra_key(const std::vector<std::string>& declared,
                                 const std::string& where) {
  struct Trie {
    std::map<uint32_t, size_t> kids;
    bool terminal = false;
  };
  std::vector<Trie> trie(1);
  const Ranges key_chars = complement({{0x00, 0x1F}, {'"', '"'}, {'\\', '\\'}, {0x7F, 0x7F}});
  for (const std::string& name : declared) {
    const std::string enc = ordered_json(name).dump();
    if (enc.find('\\') != std::string::npos) continue;  // cannot collide with an escape-free key
    size_t node = 0;
    const std::string bytes = name;
    for (size_t i = 0; i < bytes.size();) {
      const uint8_t b = uint8_t(bytes[i]);
      const size_t n = b < 0x80 ? 1 : b < 0xE0 ? 2 : b < 0xF0 ? 3 : 4;
      uint32_t c = n == 1 ? b : n == 2 ? (b & 0x1F) : n == 3 ? (b & 0x0F) : (b & 0x07);
      for (size_t k = 1; k < n; ++k) c = (c << 6) | (uint8_t(bytes[i + k]) & 0x3F);
      i += n;
      auto it = trie[node].kids.find(c);
      if (it == trie[node].kids.end()) {
        trie.push_back({});
        it = trie[node].kids.emplace(c, trie.size() - 1).first;
      }
      node = it->second;
    }
    trie[node].terminal = true;
  }
  const std::string any = add_shared(where + "-key-char", gbnf_class(key_chars));
  std::vector<std::string> names(trie.size());
  for (size_t n = trie.size(); n-- > 0;) {  // children were added after their parents
    std::vector<std::string> alts;
    Ranges out = key_chars;
    for (const auto& [c, child] : trie[n].kids) {
      Ranges one{{c, c}};
      alts.push_back(gbnf_class(one) + " " + names[child]);
      out = intersect(out, complement(one));
    }
    if (!out.empty()) alts.push_back(gbnf_class(out) + " " + any + "*");
    std::string body = join(alts);
    if (!trie[n].terminal) body = alts.empty() ? "\"\"" : "(" + body + ")?";
    names[n] = add(where + "-key", body);
  }
  return "\"\\\"\" " + names[0] + " \"\\\"\"";
}

std::string Converter::array(const ordered_json& s, const std::string& where, int depth) {
  long lo = std::max(count(s, "minItems", where), 0L), hi = count(s, "maxItems", where);
  if (lo > kMaxCount)
    throw SchemaError(where + "/minItems", "minItems above 1000 is not supported");
  if (hi > kMaxCount) hi = std::max(lo, long(kMaxCount));
  if (hi >= 0 && lo > hi) throw SchemaError(where + "/minItems", "minItems above maxItems");
  std::vector<std::string> prefix;
  const ordered_json* items = s.contains("items") ? &s["items"] : nullptr;
  const ordered_json* tuple = s.contains("prefixItems") ? &s["prefixItems"] : nullptr;
  std::string tuple_where = where + "/prefixItems";
  if (items && items->is_array()) {  // draft 4's tuple form
    if (tuple)
      throw SchemaError(where + "/items", "`items` as an array together with `prefixItems`");
    tuple = items;
    tuple_where = where + "/items";
    items = nullptr;
  } else if (!tuple && !items) {
    static const ordered_json kAny = true;
    items = &kAny;
  }
  if (tuple) {
    if (!tuple->is_array()) throw SchemaError(tuple_where, "must be an array");
    // Every prefix item is written (up to maxItems): a subset of the valid arrays.
    for (size_t i = 0; i < tuple->size() && (hi < 0 || long(i) < hi); ++i) {
      if ((*tuple)[i] == false) break;
      prefix.push_back(visit((*tuple)[i], tuple_where + "/" + std::to_string(i), depth + 1));
    }
  }
  std::string item;
  if (items && *items != false && (!tuple || prefix.size() == tuple->size()))
    item = visit(*items, where + "/items", depth + 1);
  const long n_prefix = long(prefix.size());
  long extra_lo = std::max(0L, lo - n_prefix), extra_hi = hi < 0 ? -1 : hi - n_prefix;
  if (item.empty()) {
    if (extra_lo > 0)
      throw SchemaError(where + "/minItems", "minItems needs more items than the schema admits");
    extra_hi = 0;
  }
  use("ws");
  std::string body = "\"[\" ws";
  for (size_t i = 0; i < prefix.size(); ++i) body += (i ? " \",\" ws " : " ") + prefix[i] + " ws";
  if (extra_hi != 0) {
    const std::string rest = "(\",\" ws " + item + " ws)";
    const auto reps = [&](long m, long n) {
      if (m == 0 && n == 0) return std::string();
      return " " + rest + "{" + std::to_string(m) + "," + (n < 0 ? "" : std::to_string(n)) + "}";
    };
    if (n_prefix > 0) {
      body += reps(extra_lo, extra_hi);
    } else {
      const std::string more = reps(std::max(0L, extra_lo - 1), extra_hi < 0 ? -1 : extra_hi - 1);
      body += extra_lo == 0 ? " (" + item + " ws" + more + ")?" : " " + item + " ws" + more;
    }
  }
  return add(where, body + " \"]\"");
}

// allOf: the object schemas merged (properties and required joined; the same property twice
// only with the same schema). Anything else is refused.
ordered_json Converter::merge_all_of(const ordered_json& s, const std::string& where) {
  const ordered_json& list = s["allOf"];
  if (!list.is_array() || list.empty())
    throw SchemaError(where + "/allOf", "`allOf` must be a non-empty array");
  std::vector<std::pair<const ordered_json*, std::string>> parts;
  ordered_json self = s;
  self.erase("allOf");
  parts.push_back({&self, where});
  for (size_t i = 0; i < list.size(); ++i) {
    const ordered_json* p = &list[i];
    std::string w = where + "/allOf/" + std::to_string(i);
    for (int hops = 0; p->is_object() && p->contains("$ref"); ++hops) {  // follow $defs refs
      const std::string t = (*p)["$ref"].is_string() ? (*p)["$ref"].get<std::string>() : "";
      const ordered_json* next = nullptr;
      for (const char* c : {"$defs", "definitions"}) {
        const std::string pre = std::string("#/") + c + "/";
        if (hops < 16 && t.compare(0, pre.size(), pre) == 0 && root_.contains(c) &&
            root_[c].contains(t.substr(pre.size())))
          next = &root_[c][t.substr(pre.size())];
      }
      if (!next) throw SchemaError(w + "/$ref", "allOf: this `$ref` cannot be merged");
      p = next;
      w = t.substr(1);
    }
    if (p->is_object() && p->contains("allOf"))
      throw SchemaError(w + "/allOf", "nested `allOf` is not supported");
    parts.push_back({p, w});
  }
  ordered_json out = ordered_json::object();
  ordered_json props = ordered_json::object(), required = ordered_json::array();
  bool object_like = false, additional_false = false;
  for (const auto& [p, w] : parts) {
    if (*p == true) continue;
    if (!p->is_object()) throw SchemaError(w, "allOf: only object schemas can be merged");
    for (const auto& [key, value] : p->items()) {
      if (annotations().count(key)) continue;
      if (key == "type") {
        if (value != "object")
          throw SchemaError(w + "/type", "allOf: only object schemas can be merged");
        object_like = true;
      } else if (key == "properties") {
        if (!value.is_object())
          throw SchemaError(w + "/properties", "`properties` must be an object");
        for (const auto& [name, sub] : value.items()) {
          if (props.contains(name) && props[name] != sub)
            throw SchemaError(w + "/properties/" + pointer_escape(name),
                              "allOf: the property is declared twice with different schemas");
          props[name] = sub;
        }
        object_like = true;
      } else if (key == "required") {
        if (!value.is_array()) throw SchemaError(w + "/required", "`required` must be an array");
        for (const auto& r : value)
          if (std::find(required.begin(), required.end(), r) == required.end())
            required.push_back(r);
        object_like = true;
      } else if (key == "additionalProperties" && value == false) {
        additional_false = true;
      } else if (refused().count(key) || handled().count(key)) {
        throw SchemaError(w + "/" + pointer_escape(key),
                          "allOf: `" + key +
                              "` cannot be merged (only type object, properties, required and "
                              "additionalProperties false)");
      }
    }
  }
  if (!object_like) throw SchemaError(where + "/allOf", "allOf: only object schemas can be merged");
  // additionalProperties false in one part forbids the others' properties: refused rather
  // than silently narrowed.
  if (additional_false)
    for (const auto& [p, w] : parts) {
      if (!p->is_object() || !p->contains("additionalProperties")) continue;
      const ordered_json& own =
          p->contains("properties") ? (*p)["properties"] : ordered_json::object();
      for (const auto& [name, sub] : props.items())
        if (!own.contains(name))
          throw SchemaError(
              w + "/additionalProperties",
              "allOf: additionalProperties false would forbid \"" + name + "\" of another part");
    }
  out["type"] = "object";
  out["properties"] = props;
  out["required"] = required;
  if (s.contains("$defs")) out["$defs"] = s["$defs"];
  return out;
}

}  // namespace tzero::schema_detail
