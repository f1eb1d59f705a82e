// A token's piece as readable text, for `tzero tokenize --pieces`: what the token stands for,
// not how the vocabulary spells it (byte-level BPE's "Ġworld" is " world", SentencePiece's
// "▁world" is " world", the byte token <0x0A> is a newline).
//
// display_piece escapes what would not show: \n, \t, \r and \\ as those two-character escapes;
// any other control byte (0x00..0x1F, 0x7F) and every byte that is not part of a well-formed
// UTF-8 sequence (half of a character split over two tokens) as <0xXX>, llama.cpp's spelling
// of a byte token. Byte-level and SentencePiece vocabularies give the same text for the same
// bytes.
#pragma once

#include <string>
#include <string_view>

#include "tokenizer/vocab.h"

namespace tzero {

// The bytes a token stands for: its decoded piece for normal, byte and user-defined tokens;
// the vocabulary's text for control, unknown and unused tokens ("<s>", "<unk>").
std::string piece_bytes(const Vocab& vocab, int id);

// `bytes` with the escapes above; always well-formed UTF-8.
std::string display_piece(std::string_view bytes);

}  // namespace tzero
