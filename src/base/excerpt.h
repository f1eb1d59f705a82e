// Text from outside (a model file's keys and strings, a server's answer, a request's field)
// quoted in a message: cut to a bounded length and with control characters escaped, so that an
// error line stays one short line whatever the input (a 1 GB key, a megabyte of escape
// sequences) and cannot drive the terminal.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace tzero {

// The most characters (bytes) of outside text any message quotes.
inline constexpr size_t kMaxQuotedChars = 200;

// At most max_chars bytes of text (cut at a UTF-8 character boundary, "..." and the full
// length in bytes appended when cut: `abc... (1048576 bytes)`), with bytes below 0x20, 0x7f and
// invalid UTF-8 written as \xHH. max_chars bounds the excerpt as written (an escape counts as
// its 4 bytes), so the result is at most max_chars + 30 bytes whatever the text.
std::string excerpt(std::string_view text, size_t max_chars = kMaxQuotedChars);

}  // namespace tzero
