// UTF-8 helpers for the tokenizers, and Unicode NFC normalization (through utf8proc).
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace tzero::unicode {

// Length of the well-formed UTF-8 sequence at the start of `s` (1..4), or 0 when `s` starts
// with an ill-formed one (stray continuation byte, overlong form, surrogate, > U+10FFFF,
// truncated sequence) or is empty. Follows the Unicode "well-formed UTF-8" table.
size_t valid_sequence_length(std::string_view s);

// True when the whole of `s` is well-formed UTF-8.
bool is_valid(std::string_view s);

// Canonical composition (NFC) of `s`, appended to `out`. Ill-formed bytes are kept as they are
// and act as boundaries: each well-formed run between them is normalized on its own, so no byte
// of the input is lost. Text whose code points are all below U+0300 is already NFC and is
// copied without calling the library.
void append_nfc(std::string_view s, std::string& out);

}  // namespace tzero::unicode
