#include "probe/exact_json.h"

#include <algorithm>
#include <charconv>
#include <cstdint>
#include <cstring>
#include <new>
#include <string_view>
#include <vector>

#include "base/bounded_json.h"
#include "base/excerpt.h"
#include "probe/client.h"  // ProbeError, server_text

namespace tzero::probe {

namespace {
// What a value costs in the document, about (64-bit libstdc++ and glibc malloc, measured): a
// node of 16 bytes and its share of the array around it; a string (a float is one here) or a
// container adds a heap object; an object member adds its key beside the value's node. Text
// longer than the short-string buffer adds its length.
constexpr size_t kScalarCost = 24, kHeapCost = 64, kMemberCost = 64, kShortString = 15;

size_t text_cost(size_t length) {
  return length > kShortString ? length + 1 : 0;
}

// A SAX handler that builds the document as nlohmann's DOM parser does, except for floats, and
// within limits. Pointers on the stack stay valid: a container only grows while it is the
// innermost open one.
class ExactSax {
 public:
  explicit ExactSax(const ParseLimits& limits) : limits_(limits) {}
  ojson root;
  std::string error;
  bool over_limit = false;  // error is a limit's, not the text's

  bool null() { return put(nullptr, kScalarCost); }
  bool boolean(bool v) { return put(v, kScalarCost); }
  bool number_integer(ojson::number_integer_t v) { return put(v, kScalarCost); }
  bool number_unsigned(ojson::number_unsigned_t v) { return put(v, kScalarCost); }
  bool number_float(ojson::number_float_t, const std::string& s) {
    std::string tagged = kExactTag + s;
    const size_t cost = kScalarCost + kHeapCost + text_cost(tagged.size());
    return put(std::move(tagged), cost);
  }
  bool string(std::string& s) {
    const size_t cost = kScalarCost + kHeapCost + text_cost(s.size());
    return put(std::move(s), cost);
  }
  bool binary(ojson::binary_t& b) {
    return put(ojson::binary(b), kScalarCost + kHeapCost + b.size());
  }
  bool start_object(std::size_t) { return open(ojson::object()); }
  bool key(std::string& k) {
    key_ = std::move(k);
    return spend(kMemberCost + text_cost(key_.size()));
  }
  bool end_object() { return close(); }
  bool start_array(std::size_t) { return open(ojson::array()); }
  bool end_array() { return close(); }
  template <class E>
  bool parse_error(std::size_t, const std::string&, const E& e) {
    error = e.what();
    return false;
  }

 private:
  // Adds a value's cost; false (with the error set) past the budget or the deadline.
  bool spend(size_t cost) {
    cost_ += cost;
    if (cost_ > limits_.max_document_bytes) {
      error = "its document would take more than " +
              std::to_string(limits_.max_document_bytes >> 20) + " MiB of memory";
      over_limit = true;
      return false;
    }
    if ((++events_ & 0xFFFF) == 0 && limits_.deadline &&
        std::chrono::steady_clock::now() >= *limits_.deadline) {
      error = "its parse passed the request's deadline";
      over_limit = true;
      return false;
    }
    return true;
  }
  ojson* place(ojson v) {
    if (stack_.empty()) {
      root = std::move(v);
      return &root;
    }
    ojson* top = stack_.back();
    if (top->is_array()) {
      top->push_back(std::move(v));
      return &top->back();
    }
    // Appended without a lookup (ordered_map's own is linear: quadratic for a wide object);
    // a key given twice is merged when the object closes.
    auto& members = top->get_ref<ojson::object_t&>();
    members.emplace_back(std::move(key_), std::move(v));
    return &members.back().second;
  }
  bool put(ojson v, size_t cost) {
    if (!spend(cost)) return false;
    place(std::move(v));
    return true;
  }
  bool open(ojson v) {
    if (!spend(kScalarCost + kHeapCost)) return false;
    stack_.push_back(place(std::move(v)));
    return true;
  }
  bool close() {
    ojson* done = stack_.back();
    stack_.pop_back();
    if (done->is_object()) merge_duplicate_keys(done->get_ref<ojson::object_t&>());
    return true;
  }
  // A key given twice keeps its first place and takes its last value. O(n log n) for n members,
  // with 4 bytes each besides the object.
  static void merge_duplicate_keys(ojson::object_t& members) {
    using Member = ojson::object_t::value_type;
    const size_t n = members.size();
    Member* m = members.data();  // ordered_map's operator[] takes a key, not an index
    if (n <= 8) {                // the common case: a few members, compared pairwise
      bool duplicates = false;
      for (size_t i = 0; i < n && !duplicates; ++i)
        for (size_t j = i + 1; j < n && !duplicates; ++j) duplicates = m[i].first == m[j].first;
      if (!duplicates) return;
    }
    std::vector<uint32_t> order(n);
    for (size_t i = 0; i < n; ++i) order[i] = uint32_t(i);
    std::stable_sort(order.begin(), order.end(),
                     [&](uint32_t a, uint32_t b) { return m[a].first < m[b].first; });
    std::vector<bool> dropped(n);
    bool any = false;
    for (size_t g = 0; g < n;) {  // a run of equal keys, in the order given
      size_t e = g + 1;
      while (e < n && m[order[e]].first == m[order[g]].first) dropped[order[e++]] = true;
      if (e - g > 1) {
        m[order[g]].second = std::move(m[order[e - 1]].second);
        any = true;
      }
      g = e;
    }
    if (!any) return;
    size_t kept = 0;  // compacted in place (a member's key is const: rebuilt, not assigned)
    for (size_t i = 0; i < n; ++i) {
      if (dropped[i]) continue;
      if (kept != i) {
        m[kept].~Member();
        new (&m[kept]) Member(std::move(m[i]));
      }
      ++kept;
    }
    while (members.size() > kept) members.pop_back();
  }
  const ParseLimits& limits_;
  size_t cost_ = 0, events_ = 0;
  std::vector<ojson*> stack_;
  std::string key_;
};
}  // namespace

ojson parse_exact(const std::string& text, const std::string& what, const ParseLimits& limits) {
  auto refuse = [&](const std::string& why) {
    ProbeError e(what + " is refused: " + why);
    e.limit = true;
    return e;
  };
  // Before anything is built: a run of `[` costs the scan up to the first level too deep.
  if (const size_t at = json_depth_exceeded_at(text); at != std::string_view::npos)
    throw refuse("it is JSON nested deeper than " + std::to_string(kMaxJsonDepth) +
                 " levels (arrays and objects inside each other; at byte " +
                 std::to_string(at + 1) + ")");
  ExactSax sax(limits);
  if (!ojson::sax_parse(text, &sax)) {
    if (sax.over_limit) throw refuse(sax.error);
    throw ProbeError(what + " is not JSON (" + excerpt(sax.error) + "): " + server_text(text));
  }
  return std::move(sax.root);
}

std::optional<ExactNumber> exact_number(const ojson& j) {
  if (j.is_number()) return ExactNumber{j.get<double>(), j.dump()};
  if (!j.is_string()) return std::nullopt;
  const std::string& s = j.get_ref<const std::string&>();
  const size_t tag = std::strlen(kExactTag);
  if (s.compare(0, tag, kExactTag) != 0) return std::nullopt;
  ExactNumber n;
  n.text = s.substr(tag);
  const char* b = n.text.data();
  const auto [end, ec] = std::from_chars(b, b + n.text.size(), n.value);
  if (ec != std::errc() || end != b + n.text.size()) return std::nullopt;
  return n;
}

}  // namespace tzero::probe
