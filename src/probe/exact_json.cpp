#include "probe/exact_json.h"

#include <charconv>
#include <cstring>
#include <vector>

#include "probe/client.h"  // ProbeError

namespace tzero::probe {

namespace {
// A SAX handler that builds the document as nlohmann's DOM parser does, except for floats.
// Pointers on the stack stay valid: a container only grows while it is the innermost open one.
class ExactSax {
 public:
  ojson root;
  std::string error;

  bool null() { return put(nullptr); }
  bool boolean(bool v) { return put(v); }
  bool number_integer(ojson::number_integer_t v) { return put(v); }
  bool number_unsigned(ojson::number_unsigned_t v) { return put(v); }
  bool number_float(ojson::number_float_t, const std::string& s) {
    return put(std::string(kExactTag) + s);
  }
  bool string(std::string& s) { return put(s); }
  bool binary(ojson::binary_t& b) { return put(ojson::binary(b)); }
  bool start_object(std::size_t) { return open(ojson::object()); }
  bool key(std::string& k) {
    key_ = k;
    return true;
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
    ojson& slot = (*top)[key_];
    slot = std::move(v);
    return &slot;
  }
  bool put(ojson v) {
    place(std::move(v));
    return true;
  }
  bool open(ojson v) {
    stack_.push_back(place(std::move(v)));
    return true;
  }
  bool close() {
    stack_.pop_back();
    return true;
  }
  std::vector<ojson*> stack_;
  std::string key_;
};
}  // namespace

ojson parse_exact(const std::string& text, const std::string& what) {
  ExactSax sax;
  const bool ok = ojson::sax_parse(text, &sax);
  if (!ok) {
    std::string head = text.substr(0, 120);
    for (char& c : head)
      if (c == '\n' || c == '\r') c = ' ';
    throw ProbeError(what + " is not JSON (" + sax.error + "): " + head);
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
