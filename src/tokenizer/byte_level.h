// The GPT-2 byte-to-unicode mapping used by byte-level BPE (tokenizer.ggml.model = "gpt2").
//
// Every byte 0..255 is given one printable character so that any byte string becomes a string
// of visible characters: the printable bytes '!'..'~', U+00A1..U+00AC and U+00AE..U+00FF stand
// for themselves; the other 68 bytes (controls, space, U+007F..U+00A0, U+00AD) become
// U+0100, U+0101, ... in byte order. So a space is "Ġ" (U+0120) and a newline "Ċ" (U+010A).
// Vocabulary entries and merges of byte-level BPE are written in this alphabet.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace tzero::byte_level {

// The code point that stands for `byte`.
uint32_t byte_to_codepoint(uint8_t byte);
// The byte a code point stands for, or -1 when it is not one of the 256 characters.
int codepoint_to_byte(uint32_t cp);

// Appends the mapped characters (UTF-8) of every byte of `bytes` to `out`.
void encode(std::string_view bytes, std::string& out);
// The bytes a mapped string stands for. Characters outside the alphabet (and invalid UTF-8) are
// copied through unchanged, so a token that is not byte-level text decodes to its own text.
std::string decode(std::string_view mapped);

}  // namespace tzero::byte_level
