// Differential tests of the add request's scanner (common/core/json_scan.h,
// server/add_request_text.h): a corpus of tricky add bodies, valid and not,
// goes through the scanner path and through the nlohmann document path it
// replaces, and every outcome (status, error text, logged id, topic, id,
// body bytes, due) must be the same. Also: the hand-written JSON string
// escaper against nlohmann's dump. Real SQLite registry in a temp dir.
#include <doctest/doctest.h>
#include <unistd.h>

#include <filesystem>
#include <string>
#include <vector>

#include "common/core/json.h"
#include "common/core/json_scan.h"
#include "common/core/json_span.h"
#include "common/registry/registry.h"
#include "common/registry/topic_cache.h"
#include "server/add_request_text.h"

namespace {

using dq::ParsedAdd;

constexpr int64_t kNow = 1772368496000;  // 2026-03-01

struct World {
  World() {
    char pattern[] = "/tmp/dq-addtext-XXXXXX";
    REQUIRE(mkdtemp(pattern) != nullptr);
    dir = pattern;
    auto registry = dq::Registry::open(dir + "/dq.db");
    REQUIRE(registry.is_ok());
    dq::Topic topic;
    topic.name = "orders";
    topic.callback_url = "http://127.0.0.1:8080/cb";
    topic.default_delay_s = 7;
    REQUIRE((*registry)->add_topic(topic).is_ok());
    topic.name = "paused";
    topic.online = false;
    REQUIRE((*registry)->add_topic(topic).is_ok());
    topics = std::make_unique<dq::TopicCache>(dir + "/dq.db");
    REQUIRE(topics->refresh().is_ok());
    config.max_body_bytes = 200;
  }
  ~World() { std::filesystem::remove_all(dir); }
  std::string dir;
  std::unique_ptr<dq::TopicCache> topics;
  dq::Config config;
};

std::string describe(const ParsedAdd& parsed) {
  if (!parsed.request.is_ok()) {
    return std::string(parsed.is_json ? "json" : "not-json") + " refused " +
           std::to_string(static_cast<int>(parsed.request.status().code())) + " [" +
           parsed.request.status().message() + "] id " + parsed.logged_id;
  }
  const dq::AddRequest& add = *parsed.request;
  return "added " + add.topic + " [" + add.id + "] [" + add.body + "] " +
         (add.due.relative ? "in " : "at ") + std::to_string(add.due.ms);
}

// Same outcome both ways; returns it for further checks.
std::string same_both_ways(World& world, const std::string& topic, const std::string& text) {
  ParsedAdd fast = dq::parse_add_text(topic, text, *world.topics, world.config, kNow);
  ParsedAdd dom = dq::parse_add_text_dom(topic, text, *world.topics, world.config, kNow);
  INFO("text: ", text);
  CHECK(describe(fast) == describe(dom));
  // The scanner never answers for text nlohmann refuses.
  if (dq::scan_json_object(text)) {
    CHECK(dq::Json::accept(text));
  }
  return describe(fast);
}

std::string nested(int depth) {
  return R"({"id":"deep","body":)" + std::string(depth, '[') + std::string(depth, ']') + "}";
}

const std::vector<std::string> kCorpus = {
    // clean requests: the scanner's path
    R"({"id":"a1","body":{"x":1},"delay":5})",
    R"({"body":"hi","id":"a2"})",
    " \n\t{ \"id\" : \"a3\" , \"body\" : [1, 2 ,3] , \"delay\" : 0 } \r\n",
    R"({"id":"a\"b","body":null})",
    R"({"id":"a\\b\/c","body":null})",
    R"({"id":"a\u0041","body":1})",
    R"({"id":"\u00e9t\u00e9","body":true})",
    "{\"id\":\"\xe8\xae\xa2\xe5\x8d\x95\x31\",\"body\":\"\xe4\xb8\xad\xe6\x96\x87\"}",
    R"({"id":"\ud83d\ude00","body":"\uD83D\uDE00"})",
    "{\"id\":\"\xf0\x9f\x98\x80\",\"body\":\"\xf4\x8f\xbf\xbf\"}",
    R"({"id":12345,"body":1})",
    R"({"id":1.5,"body":1})",
    R"({"id":1e3,"body":1})",
    R"({"id":-7,"body":1})",
    R"({"id":12345678901234567890123,"body":1})",
    R"({"id":"x","body":{"a":{"b":[{"c":"\u0000"}]}},"delay":1.5})",
    R"({"id":"x","body":"}\"]{\\","delay":2})",
    R"({"id":"x","body":{"":1,"\u0062":[true,false,null,-0.5e-3,1E+2]}})",
    R"({"id":"x","body":0.1e-999})",
    R"({"id":"x","body":1e308})",
    R"({"id":"x","body":-1.7976931348623157e308})",
    R"({"id":"x","body":123456789012345678901234567890})",
    "{\"id\":\"x\",\"body\":\"\x7f\"}",
    // delay forms
    R"({"id":"d","body":1,"delay":1.25})",
    R"({"id":"d","body":1,"delay":1e2})",
    R"({"id":"d","body":1,"delay":1E+2})",
    R"({"id":"d","body":1,"delay":0.0005})",
    R"({"id":"d","body":1,"delay":0.0015})",
    R"({"id":"d","body":1,"delay":10.0})",
    R"({"id":"d","body":1,"delay":-0})",
    R"({"id":"d","body":1,"delay":-0.0})",
    R"({"id":"d","body":1,"delay":3600})",
    R"({"id":"d","body":1,"delay":316224000})",
    R"({"id":"d","body":1,"delay":316224001})",
    R"({"id":"d","body":1,"delay":999999999999999})",
    R"({"id":"d","body":1,"delay":18446744073709551616})",
    R"({"id":"d","body":1,"delay":1e-400})",
    R"({"id":"d","body":1,"delay":"5"})",
    R"({"id":"d","body":1,"delay":null})",
    R"({"id":"d","body":1,"delay":[]})",
    R"({"id":"d","body":1,"delay":{}})",
    R"({"id":"d","body":1,"delay":true})",
    R"({"id":"d","body":1,"delay":-1})",
    R"({"id":"d","body":1,"delay":00})",
    R"({"id":"d","body":1,"delay":1e999})",
    // at forms
    R"({"id":"t","body":1,"at":"2026-03-01 12:34:56"})",
    R"({"id":"t","body":1,"at":"2026-03-01T12:34:56+08:00"})",
    R"({"id":"t","body":1,"at":1772368496})",
    R"({"id":"t","body":1,"at":1772368496.5})",
    R"({"id":"t","body":1,"at":"+90 seconds"})",
    R"({"id":"t","body":1,"at":""})",
    R"({"id":"t","body":1,"at":"garbage"})",
    R"({"id":"t","body":1,"at":"2026-02-30"})",
    R"({"id":"t","body":1,"at":1e12})",
    R"({"id":"t","body":1,"at":99999999999})",
    R"({"id":"t","body":1,"at":[]})",
    R"({"id":"t","body":1,"at":null})",
    R"({"id":"t","body":1,"at":{"x":1}})",
    R"({"id":"t","body":1,"at":"\u002b90 seconds"})",
    R"({"id":"t","body":1,"delay":1,"at":"+1 minute"})",
    // duplicates, unknown and escaped keys
    R"({"id":"a","id":"b","body":1})",
    R"({"id":"a","body":1,"body":2})",
    R"({"id":"a","body":1,"delay":1,"delay":2})",
    R"({"id":"a","body":1,"delay":1,"delay":-2})",
    R"({"id":"a","body":1,"extra":2})",
    R"({"id":"a","body":1,"b":1,"a":2})",
    R"({"id":"bad\u0001","body":1,"zz":2})",
    R"({"i\u0064":"a","body":1})",
    R"({"\u0062ody":2,"id":"x"})",
    R"({"":1,"id":"x","body":1})",
    R"({"id":"x","body":1,"a":1,"b":2,"c":3,"d":4,"e":5,"f":6,"g":7})",
    // missing or wrong-typed members, ids that are not valid
    R"({"body":1})",
    R"({"id":"a"})",
    R"({})",
    R"({"id":null,"body":1})",
    R"({"id":true,"body":1})",
    R"({"id":[],"body":1})",
    R"({"id":{"a":1},"body":1})",
    R"({"id":"","body":1})",
    R"({"id":"\u0001","body":1})",
    R"({"id":"\u007f","body":1})",
    R"({"id":"\u0085","body":1})",
    R"({"id":"a\nb","body":1})",
    "{\"id\":\"" + std::string(300, 'x') + "\",\"body\":1}",
    "{\"id\":\"" + std::string(256, 'x') + "\",\"body\":1}",
    R"({"id":"big","body":")" + std::string(250, 'b') + "\"}",
    R"({"id":"big","body":")" + std::string(198, 'b') + "\"}",
    R"({"id":"big","body":")" + std::string(199, 'b') + "\"}",
    // not JSON, or not an object
    "",
    "   ",
    "{",
    R"({"id":"a","body":1)",
    R"({"id":"a","body":1}x)",
    R"({"id":"a","body":1}{})",
    R"({"id":"a","body":1} 0)",
    "{'id':1}",
    R"({"id":"a","body":1,})",
    R"({"id":"a",,"body":1})",
    R"({"id" "a","body":1})",
    R"({"id":"a" "body":1})",
    R"([1,2])",
    R"("str")",
    "42",
    "null",
    "\xef\xbb\xbf{\"id\":\"bom\",\"body\":1}",
    "{\"id\":\"a\",\"body\":\"\xff\"}",
    "{\"id\":\"a\",\"body\":\"\xc0\xaf\"}",
    "{\"id\":\"a\",\"body\":\"\xed\xa0\x80\"}",
    "{\"id\":\"a\",\"body\":\"\xe4\xb8\"}",
    "{\"id\":\"a\",\"body\":\"\xf4\x90\x80\x80\"}",
    "{\"id\":\"a\",\"body\":\"\xe0\x80\xaf\"}",
    "{\"id\":\"a\xff\",\"body\":1}",
    R"({"id":"a","body":"\ud800"})",
    R"({"id":"a","body":"\udc00"})",
    R"({"id":"a","body":"\ud800\u0041"})",
    R"({"id":"a","body":"\ud800\"})",
    R"({"id":"a","body":"\u12"})",
    R"({"id":"a","body":"\u12G4"})",
    R"({"id":"a","body":"\q"})",
    "{\"id\":\"a\",\"body\":\"\x01\"}",
    "{\"id\":\"a\",\"body\":\"tab\there\"}",
    // Written once as "...}\0": a literal's NUL ends a std::string made from
    // it, so this was always the plain request. NULs: in the test case below.
    R"({"id":"a","body":1})",
    R"({"id":"a","body":01})",
    R"({"id":"a","body":1.})",
    R"({"id":"a","body":.5})",
    R"({"id":"a","body":-})",
    R"({"id":"a","body":+1})",
    R"({"id":"a","body":1e})",
    R"({"id":"a","body":1e+})",
    R"({"id":"a","body":NaN})",
    R"({"id":"a","body":Infinity})",
    R"({"id":"a","body":1e309})",
    R"({"id":"a","body":-1e309})",
    R"({"id":"a","body":0.000001e305})",
    R"({"id":"a","body":tru})",
    R"({"id":"a","body":nul})",
    R"({"id":"a","body":falsey})",
    R"({"id":"a","body":[1,]})",
    R"({"id":"a","body":[1 2]})",
    R"({"id":"a","body":{"k"}})",
    R"({"id":"a","body":{1:2}})",
    R"({"id":"a","body":/*c*/1})",
};

}  // namespace

TEST_CASE("every add body gives the same outcome through the scanner and the document") {
  World world;
  std::vector<std::string> corpus = kCorpus;
  corpus.push_back(R"({"id":"a","body":1})" + std::string(2, '\0'));  // two trailing NULs
  corpus.push_back("{\"id\":\"x\",\"body\":1" + std::string(400, '0') + "}");
  corpus.push_back(nested(100));
  corpus.push_back(nested(300));
  for (const auto& text : corpus) {
    same_both_ways(world, "orders", text);
  }
  CHECK(corpus.size() >= 140);
}

TEST_CASE("topics: bad, unknown and offline give the same outcome both ways") {
  World world;
  for (const char* topic : {"orders", "paused", "nope", "bad topic", ""}) {
    same_both_ways(world, topic, R"({"id":"a","body":1,"delay":3})");
    same_both_ways(world, topic, R"({"id":"","body":1})");
    same_both_ways(world, topic, R"({"id":"a","body":1,"extra":1})");
  }
}

TEST_CASE("clean requests are read by the scanner, and read right") {
  World world;
  // The scanner answers for the usual forms (the path that saves the document).
  for (const char* text : {R"({"id":"a1","body":{"x":1},"delay":5})",
                           R"({"id":"\u00e9","body":"\ud83d\ude00","at":"+1 minute"})",
                           R"({"id":42,"body":[1,2.5e3,null]})"}) {
    INFO(text);
    CHECK(dq::scan_json_object(text).has_value());
  }
  CHECK(same_both_ways(world, "orders", R"({"body" : {"k": "v\n"} ,"id":"a\"1","delay":2.5})") ==
        R"(added orders [a"1] [{"k": "v\n"}] in 2500)");
  CHECK(same_both_ways(world, "orders", R"({"id":"plain","body":"x"})") ==
        "added orders [plain] [\"x\"] in 7000");
  // An integer id is kept as written; any other number is refused.
  CHECK(same_both_ways(world, "orders", R"({"id":12345678901234567890123,"body":1})") ==
        "added orders [12345678901234567890123] [1] in 7000");
  CHECK(same_both_ways(world, "orders", R"({"id":-7,"body":1})") ==
        "added orders [-7] [1] in 7000");
  for (const char* text : {R"({"id":1.50,"body":1})", R"({"id":1e400,"body":1})"}) {
    INFO(text);
    CHECK(same_both_ways(world, "orders", text).find("send this one as a string") !=
          std::string::npos);
  }
  // `tz` reads `at`'s wall time in that zone, both ways; refusals alike.
  CHECK(same_both_ways(world, "orders",
                       R"({"id":"z","body":1,"at":"2027-03-28 02:30","tz":"Europe/Paris"})") ==
        "added orders [z] [1] at 1806197400000");  // skipped: 03:30 CEST, 01:30 UTC
  CHECK(same_both_ways(world, "orders",
                       R"({"tz":"America/New_York","id":"z","body":1,"at":"2027-11-07 01:30"})") ==
        "added orders [z] [1] at 1825565400000");  // repeated: the first, 01:30 EDT
  CHECK(same_both_ways(world, "orders", R"({"id":"z","body":1,"at":"2027-03-28 02:30","tz":""})")
            .rfind("added", 0) == 0);
  for (const char* text : {R"({"id":"z","body":1,"at":"2027-03-28 09:00","tz":"Mars/Olympus"})",
                           R"({"id":"z","body":1,"at":"2027-03-28 09:00","tz":7})",
                           R"({"id":"z","body":1,"delay":5,"tz":"Europe/Paris"})",
                           R"({"id":"z","body":1,"tz":"Europe/Paris"})"}) {
    INFO(text);
    CHECK(same_both_ways(world, "orders", text).rfind("json refused", 0) == 0);
  }
  // A refusal still names the first problem as before.
  CHECK(same_both_ways(world, "orders", R"({"id":"a","body":1,"b":1,"a":2})") ==
        "json refused 1 [unknown field 'a' (expected id, body, delay, at, tz, ttl, expire_at or "
        "after)] id \"a\"");
}

TEST_CASE("append_json_string writes what nlohmann's dump writes") {
  std::vector<std::string> texts = {"",
                                    "plain",
                                    "a\"b\\c/d",
                                    "\x7f",
                                    "\xe8\xae\xa2\xe5\x8d\x95",
                                    "\xf0\x9f\x98\x80",
                                    "bad\xff",
                                    "\xc0\xaf",
                                    "\xe4\xb8",
                                    std::string("nul\0x", 5)};
  for (int byte = 0; byte < 0x80; ++byte) {
    texts.push_back(std::string(1, static_cast<char>(byte)));
  }
  for (const auto& text : texts) {
    std::string written = "prefix";
    dq::append_json_string(&written, text);
    CHECK(written ==
          "prefix" + dq::Json(text).dump(-1, ' ', false, dq::Json::error_handler_t::replace));
  }
}
