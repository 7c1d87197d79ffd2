// Unit tests of the raw-JSON helpers (common/core/json_span.h). Each span found
// is checked against what nlohmann makes of the same text, so the scanner
// and the parser that validated the request cannot disagree on which value
// is "the" body.
#include <doctest/doctest.h>

#include <random>
#include <string>
#include <vector>

#include "common/core/json.h"
#include "common/core/json_check.h"
#include "common/core/json_span.h"

using dq::Json;

namespace {

// The span of `name` in `text`, which must also be what nlohmann parsed.
std::string span_of(const std::string& text, const std::string& name) {
  auto span = dq::json_member_span(text, name);
  REQUIRE_MESSAGE(span.has_value(), text);
  Json parsed = Json::parse(text);
  CHECK(Json::parse(*span) == parsed[name]);
  return std::string(*span);
}

}  // namespace

TEST_CASE("a member's raw value text is found, byte for byte") {
  CHECK(span_of(R"({"id":"a","body":{"z":1,"a":2,"e":1e2}})", "body") ==
        R"({"z":1,"a":2,"e":1e2})");
  CHECK(span_of(R"({"body" :  [1, 2.50, "x"]  ,"id":"a"})", "body") == R"([1, 2.50, "x"])");
  CHECK(span_of(R"({"body":"\u00e9t\u00e9"})", "body") == R"("\u00e9t\u00e9")");
  CHECK(span_of("{\"body\":12.0}", "body") == "12.0");
  CHECK(span_of("{\"body\":null}", "body") == "null");
  CHECK(span_of("{\"body\":-0.5e-3 }", "body") == "-0.5e-3");
  CHECK(span_of("{\"body\":true,\"x\":false}", "x") == "false");
  CHECK(span_of("\xEF\xBB\xBF {\"body\":1}", "body") == "1");  // a BOM, as nlohmann allows
  // Strings that look like structure, escaped quotes and backslashes.
  std::string tricky = R"({"a":"}\"{[","body":{"s":"x\\","t":["]\"",{"u":"}"}]},"c":"body"})";
  CHECK(span_of(tricky, "body") == R"({"s":"x\\","t":["]\"",{"u":"}"}]})");
  CHECK(span_of(tricky, "c") == R"("body")");
}

TEST_CASE("only top-level members count; the last duplicate wins; escaped keys match") {
  std::string nested = R"({"x":{"body":1},"body":2})";
  CHECK(span_of(nested, "body") == "2");
  CHECK_FALSE(dq::json_member_span(R"({"x":{"body":1}})", "body").has_value());
  CHECK(span_of(R"({"body":1,"id":"a","body":[2]})", "body") == "[2]");
  CHECK(span_of(R"({"b\u006fdy":"escaped key"})", "body") == R"("escaped key")");
  CHECK(span_of(R"({"body":1,"b\u006fdy":2})", "body") == "2");
}

TEST_CASE("not an object, or no such member: nullopt") {
  CHECK_FALSE(dq::json_member_span("[1,2]", "body").has_value());
  CHECK_FALSE(dq::json_member_span("{}", "body").has_value());
  CHECK_FALSE(dq::json_member_span("  { }  ", "body").has_value());
  CHECK_FALSE(dq::json_member_span("\"body\"", "body").has_value());
  CHECK_FALSE(dq::json_member_span("", "body").has_value());
}

TEST_CASE("array element spans") {
  std::string text = R"( [ {"id":"a","body":1e2} , "x,]" ,[1,[2]],3.0, null ] )";
  auto spans = dq::json_array_spans(text);
  REQUIRE(spans.has_value());
  std::vector<std::string> got(spans->begin(), spans->end());
  CHECK(got ==
        std::vector<std::string>{R"({"id":"a","body":1e2})", R"("x,]")", "[1,[2]]", "3.0", "null"});
  auto empty = dq::json_array_spans("[ ]");
  REQUIRE(empty.has_value());
  CHECK(empty->empty());
  CHECK_FALSE(dq::json_array_spans("{\"a\":1}").has_value());
}

TEST_CASE("embedding a stored body, and adding a raw member to an object") {
  CHECK(dq::embeddable_json("{\"z\":1,\"a\":1e2}") == "{\"z\":1,\"a\":1e2}");
  CHECK(dq::embeddable_json("not json") == "\"not json\"");
  CHECK(dq::embeddable_json("") == "\"\"");
  std::string joined = dq::with_raw_member("{\"id\":\"a\"}", "body", "[1, 2.50]");
  CHECK(joined == "{\"id\":\"a\",\"body\":[1, 2.50]}");
  CHECK(Json::accept(joined));
  CHECK(dq::with_raw_member("{}", "body", "null") == "{\"body\":null}");
}

// plainly_json may say "not known" (false) for valid JSON, never "JSON" for
// text nlohmann refuses.
TEST_CASE("the quick JSON check agrees with nlohmann wherever it answers") {
  for (const char* text :
       {"{}", "[]", " {\"a\" : [1, -0, 2.50, true, false, null, \"x\"]} ", "\"\\\"\\/\\n\"",
        "{\"k\":{\"k\":[[[]],{}]}}", "\"\xC3\xA9\xE8\xAE\xA2\xF0\x9F\x98\x80\"", "123", "-1.5"}) {
    CHECK_MESSAGE(dq::plainly_json(text), text);
    CHECK(Json::accept(std::string(text)));
  }
  for (const char* text : {"",
                           " ",
                           "{",
                           "}",
                           "[1,]",
                           "{\"a\"}",
                           "{\"a\":1,}",
                           "{,}",
                           "[1 2]",
                           "01",
                           "1.",
                           ".5",
                           "-",
                           "tru",
                           "nul",
                           "truex",
                           "\"a",
                           "\"\\x\"",
                           "\"\x01\"",
                           "\"\xC0\xAF\"",
                           "\"\xED\xA0\x80\"",
                           "\"\xF4\x90\x80\x80\"",
                           "\"\xE8\xAE\"",
                           "[1]]",
                           "{\"a\":1}}",
                           "[}",
                           "{]",
                           "1 2"}) {
    CHECK_FALSE_MESSAGE(dq::plainly_json(text), text);
    CHECK_FALSE(Json::accept(std::string(text)));
  }
  // Left to nlohmann: a byte order mark, \u escapes, exponents.
  CHECK_FALSE(dq::plainly_json("\xEF\xBB\xBF{}"));
  CHECK_FALSE(dq::plainly_json("\"\\u00e9\""));
  CHECK_FALSE(dq::plainly_json("1e2"));
  // nlohmann refuses 1E400, but it is JSON: a body with it is embedded as is.
  std::string overflow = R"({"a":"\u00e9","b":1E400})";
  CHECK(dq::embeddable_json(overflow) == overflow);
  CHECK(dq::embeddable_json("[1e400") == Json("[1e400").dump());  // not JSON: a string
  // Mutations of valid documents: byte flips, cuts and insertions.
  std::mt19937 random(13);
  const std::string seeds[] = {R"({"a":[1,2.5,{"b":"c\u00e9\n"}],"d":null,"e":true})",
                               "[\"\xE8\xAE\xA2\xE5\x8D\x95\",-0.25,false,{}]"};
  const char alphabet[] = "{}[],:\"\\0123456789.-+eEtrufalsn \x80\xBF\xC3\xE8\xF0";
  int checked = 0;
  for (int round = 0; round < 20000; ++round) {
    std::string text = seeds[round % 2];
    for (int edits = 1 + random() % 3; edits > 0; --edits) {
      size_t at = random() % (text.size() + 1);
      char c = alphabet[random() % (sizeof(alphabet) - 1)];
      switch (random() % 3) {
        case 0:
          if (at < text.size()) {
            text[at] = c;
          }
          break;
        case 1:
          text.insert(at, 1, c);
          break;
        default:
          text.erase(at, 1);
      }
    }
    if (dq::plainly_json(text)) {
      ++checked;
      if (!Json::accept(text)) {
        FAIL_CHECK("plainly_json accepted what nlohmann refuses: " << text);
      }
    }
  }
  CHECK(checked > 100);
}
