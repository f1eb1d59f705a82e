// UTF-8 helpers for the tokenizers, and Unicode normalization and lowercasing (through
// utf8proc).
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

enum class NormalForm { NFC, NFD, NFKC, NFKD };

// The normalization form `form` of `s`, appended to `out`. Ill-formed bytes are kept as they
// are and act as boundaries: each well-formed run between them is normalized on its own, so no
// byte of the input is lost. Runs that cannot change are copied without calling the library:
// code points below U+0300 for NFC, ASCII for the others.
void append_normalized(std::string_view s, NormalForm form, std::string& out);

// NFC (append_normalized with NormalForm::NFC).
void append_nfc(std::string_view s, std::string& out);

// `s` lowercased code point by code point (Unicode lowercase mapping; U+0130 gives "i" U+0307,
// the one unconditional multi-character mapping), appended to `out`; ill-formed bytes kept.
void append_lowercase(std::string_view s, std::string& out);

// Whether the code point at the start of `s` (well-formed) is Unicode White_Space; `len` gets
// its length. 0 for ill-formed text.
bool starts_with_white_space(std::string_view s, size_t& len);

}  // namespace tzero::unicode
