// Unit tests of the id syntax (valid_id in common/store/job.h): any UTF-8 text of
// 1-256 bytes without control characters, byte sequences checked one by one.
// The end-to-end side (HTTP paths, legacy port, callback) is test_any_ids.cc.
#include <doctest/doctest.h>

#include <string>

#include "common/store/job.h"

TEST_CASE("ids: any UTF-8 text of 1-256 bytes without control characters") {
  for (std::string id :
       {"订单1", "order#1", "a b", "a/b", "user|42", "order:42", "x?y=1&z", "100%", "a+b", "é",
        "\xF0\x9F\x98\x80" /* U+1F600 */, "\xC2\xA0" /* U+00A0, the first after C1 */,
        "\xEF\xBF\xBF" /* U+FFFF */, "\xF4\x8F\xBF\xBF" /* U+10FFFF */}) {
    CAPTURE(id);
    CHECK(dq::valid_id(id));
  }
  CHECK(dq::valid_id(std::string(256, 'a')));
  CHECK(dq::valid_id(std::string(85, 'a') + std::string("订") + std::string(168, 'b')));  // 256
  CHECK_FALSE(dq::valid_id(std::string(257, 'a')));
  CHECK_FALSE(dq::valid_id(""));
  for (std::string id : {
           std::string("a\x01"),
           std::string("a\tb"),
           std::string("a\nb"),
           std::string("a\x7f"),
           std::string("a\0b", 3),
           std::string("\xC2\x80"),          // U+0080, C1 control
           std::string("\xC2\x9F"),          // U+009F, C1 control
           std::string("\xC0\xAF"),          // overlong '/'
           std::string("\xC1\xBF"),          // overlong
           std::string("\xE0\x80\xAF"),      // overlong '/'
           std::string("\xF0\x80\x80\xAF"),  // overlong '/'
           std::string("\xED\xA0\x80"),      // U+D800, a surrogate
           std::string("\xED\xBF\xBF"),      // U+DFFF, a surrogate
           std::string("\xF4\x90\x80\x80"),  // past U+10FFFF
           std::string("\xF5\x80\x80\x80"),
           std::string("\xFF"),
           std::string("\x80"),          // a lone continuation byte
           std::string("a\xE8\xAE"),     // cut short
           std::string("\xE8\x41\x41"),  // not continuation bytes
       }) {
    CAPTURE(id);
    CHECK_FALSE(dq::valid_id(id));
  }
}
