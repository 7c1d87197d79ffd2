#include "common/core/utf8.h"

namespace dq {

size_t utf8_sequence_length(std::string_view text, size_t at) {
  unsigned char lead = static_cast<unsigned char>(text[at]);
  size_t length = 0;
  unsigned char low = 0x80, high = 0xBF;  // the second byte's range
  if (lead >= 0xC2 && lead <= 0xDF) {
    length = 2;
  } else if (lead >= 0xE0 && lead <= 0xEF) {
    length = 3;
    if (lead == 0xE0) {
      low = 0xA0;
    }
    if (lead == 0xED) {
      high = 0x9F;
    }
  } else if (lead >= 0xF0 && lead <= 0xF4) {
    length = 4;
    if (lead == 0xF0) {
      low = 0x90;
    }
    if (lead == 0xF4) {
      high = 0x8F;
    }
  } else {
    return 0;
  }
  if (text.size() - at < length) {
    return 0;
  }
  for (size_t k = 1; k < length; ++k) {
    unsigned char byte = static_cast<unsigned char>(text[at + k]);
    if (byte < (k == 1 ? low : 0x80) || byte > (k == 1 ? high : 0xBF)) {
      return 0;
    }
  }
  return length;
}

}  // namespace dq
