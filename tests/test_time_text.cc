// Unit tests of the PHP-compatibility helpers that need no server: the one
// time parser (common/core/time_text.h), success rules (common/registry/success_rule.h),
// the PHP view of a body (common/http/php_fields.h), form callbacks
// (consumer/callback_request.h) and legacy number ids (server/legacy_fields.h).
#include <doctest/doctest.h>

#include <ctime>

#include "common/core/clock.h"
#include "common/core/time_text.h"
#include "common/http/php_fields.h"
#include "common/registry/success_rule.h"
#include "consumer/callback_request.h"
#include "server/legacy_fields.h"
#include "tests/support/callback_server.h"

using namespace dq;
using dq::test::parse_form;

namespace {

int64_t local_ms(int year, int month, int day, int hour, int minute, int second) {
  struct tm parts {};
  parts.tm_year = year - 1900;
  parts.tm_mon = month - 1;
  parts.tm_mday = day;
  parts.tm_hour = hour;
  parts.tm_min = minute;
  parts.tm_sec = second;
  parts.tm_isdst = -1;
  return static_cast<int64_t>(mktime(&parts)) * 1000;
}

DueTime parsed(const std::string& text) {
  auto due = parse_time_text(text);
  REQUIRE_MESSAGE(due.is_ok(), text << ": " << due.status().message());
  return *due;
}

}  // namespace

TEST_CASE("every time form means the time it says") {
  int64_t noon = local_ms(2026, 3, 1, 12, 34, 56);
  CHECK(parsed("2026-03-01 12:34:56").ms == noon);
  CHECK_FALSE(parsed("2026-03-01 12:34:56").relative);
  CHECK(parsed("2026-03-01 12:34").ms == local_ms(2026, 3, 1, 12, 34, 0));
  CHECK(parsed("2026-03-01").ms == local_ms(2026, 3, 1, 0, 0, 0));
  CHECK(parsed("2024-02-29 00:00:00").ms == local_ms(2024, 2, 29, 0, 0, 0));  // leap year
  // ISO 8601 carries its own offset: the server's zone does not matter.
  CHECK(parsed("2026-03-01T12:34:56+08:00").ms == 1772339696000);
  CHECK(parsed("2026-03-01T04:34:56Z").ms == 1772339696000);
  CHECK(parsed("2026-03-01T12:34:56+0800").ms == 1772339696000);
  CHECK(parsed("2026-03-01T01:34:56-03:00").ms == 1772339696000);
  CHECK(parsed("2026-03-01 04:34:56.250Z").ms == 1772339696250);
  CHECK(parsed("2026-03-01T12:34:56").ms == noon);  // no offset: local
  // Unix seconds as digits.
  CHECK(parsed("1772339696").ms == 1772339696000);
  CHECK(parsed("1772339696.5").ms == 1772339696500);
  // "" is now; relative forms count from now (Redis's clock).
  CHECK(parsed("").relative);
  CHECK(parsed("").ms == 0);
  CHECK(parsed("+90 seconds").relative);
  CHECK(parsed("+90 seconds").ms == 90000);
  CHECK(parsed("+1 second").ms == 1000);
  CHECK(parsed("+5 minutes").ms == 300000);
  CHECK(parsed("+1 minute").ms == 60000);
  CHECK(parsed("+2 hours").ms == 7200000);
  CHECK(parsed("+1 hour").ms == 3600000);
  CHECK(parsed("+3 days").ms == 3 * 86400000LL);
  CHECK(parsed("+1 day").ms == 86400000);

  auto number = parse_time_value(Json(1772339696));
  REQUIRE(number.is_ok());
  CHECK(number->ms == 1772339696000);
  CHECK_FALSE(number->relative);
  CHECK(parse_time_value(Json(1772339696.25))->ms == 1772339696250);
}

TEST_CASE("impossible and unknown times are refused, never normalized") {
  for (const char* bad :
       {"2026-02-30 10:00:00", "2025-02-29 00:00:00", "2026-13-01 00:00:00", "2026-04-31 10:00:00",
        "2026-03-01 24:00:00", "2026-03-01 25:00", "2026-03-01 12:60:00", "2026-03-01 12:00:61",
        "2026-00-10", "2026-03-00", "2026-03-01T12:00:00+15:00"}) {
    CAPTURE(bad);
    auto due = parse_time_text(bad);
    REQUIRE(due.status().code() == Code::kInvalid);
    CHECK(due.status().message().find("not") != std::string::npos);
  }
  for (const char* junk : {"junk", "tomorrow", "2026-3-1 1:2:3", "2026-03-01 12:00:00 x",
                           "+5 fortnights", "+ seconds", "2026/03/01", "1.2.3", "-5"}) {
    CAPTURE(junk);
    CHECK(parse_time_text(junk).status().code() == Code::kInvalid);
  }
  CHECK(parse_time_value(Json(-1)).status().code() == Code::kInvalid);
  // Past year 9999 the milliseconds would overflow int64 (fuzz_time_text found it).
  for (const char* huge : {"63512163512160600534", "253402300800", "1e300"}) {
    CAPTURE(huge);
    CHECK(parse_time_text(huge).status().code() == Code::kInvalid);
  }
  CHECK(parse_time_value(Json(6.35e19)).status().code() == Code::kInvalid);
  CHECK(parse_time_value(Json(253402300799))->ms == 253402300799000);
  CHECK(parse_time_value(Json::array()).status().code() == Code::kInvalid);
  CHECK(parse_time_value(Json(true)).status().code() == Code::kInvalid);
}

TEST_CASE("parse_datetime_ms takes Y-m-d H:i:s only") {
  CHECK(*parse_datetime_ms("2026-03-01 12:34:56") == local_ms(2026, 3, 1, 12, 34, 56));
  CHECK(parse_datetime_ms("2026-03-01").status().code() == Code::kInvalid);
  CHECK(parse_datetime_ms("2026-02-30 10:00:00").status().code() == Code::kInvalid);
  CHECK(parse_datetime_ms("+1 hours").status().code() == Code::kInvalid);
}

TEST_CASE("format_local_datetime writes PHP's date('Y-m-d H:i:s')") {
  CHECK(format_local_datetime(local_ms(2026, 3, 1, 9, 5, 7)) == "2026-03-01 09:05:07");
  CHECK(format_local_datetime(local_ms(2026, 3, 1, 9, 5, 7) + 999) == "2026-03-01 09:05:07");
}

TEST_CASE("success rules") {
  auto rule = parse_success_rule("code=0");
  REQUIRE(rule.is_ok());
  std::string why;
  CHECK(response_matches(*rule, R"({"code":0,"msg":"ok"})", &why));
  CHECK(response_matches(*rule, R"({"code":"0"})", &why));
  CHECK(response_matches(*rule, R"({"code":0.0})", &why));
  CHECK_FALSE(response_matches(*rule, R"({"code":500})", &why));
  CHECK(why == "the answer has code=500");
  CHECK_FALSE(response_matches(*rule, R"({"msg":"ok"})", &why));
  CHECK(why == "the answer has no code");
  CHECK_FALSE(response_matches(*rule, "OK", &why));
  CHECK(why == "the answer is not JSON");

  auto nested = parse_success_rule("data.status=ok");
  REQUIRE(nested.is_ok());
  CHECK(nested->path == std::vector<std::string>{"data", "status"});
  CHECK(response_matches(*nested, R"({"data":{"status":"ok"}})", &why));
  CHECK_FALSE(response_matches(*nested, R"({"data":{"status":"no"}})", &why));
  CHECK_FALSE(response_matches(*nested, R"({"data":"ok"})", &why));
  auto flag = parse_success_rule("ok=true");
  CHECK(response_matches(*flag, R"({"ok":true})", &why));
  CHECK_FALSE(response_matches(*flag, R"({"ok":"yes"})", &why));

  for (const char* bad : {"", "code", "=0", "a..b=1", "a b=1", ".a=1"}) {
    CAPTURE(bad);
    CHECK(parse_success_rule(bad).status().code() == Code::kInvalid);
  }
}

TEST_CASE("the PHP view of a body and the form a callback sends") {
  Job job;
  job.topic = "orders";
  job.id = "o-1";
  job.body = R"({"order_id":"A 1","amount":1.50,"tags":["x","y"],"paid":true,"note":null})";
  job.due_at_ms = local_ms(2026, 3, 1, 12, 0, 0);
  job.created_at_ms = local_ms(2026, 3, 1, 11, 0, 0);
  job.attempts = 1;
  auto fields = parse_form(callback_form(job));
  std::vector<std::pair<std::string, std::string>> expected = {
      {"order_id", "A 1"},
      {"amount", "1.50"},
      {"tags", R"(["x","y"])"},
      {"paid", "1"},
      {"note", ""},
      {"notify_time", "2026-03-01 12:00:00"},
      {"dq_set_time", "2026-03-01 11:00:00"}};
  CHECK(fields == expected);

  job.attempts = 3;  // two failed before this one
  fields = parse_form(callback_form(job));
  REQUIRE(fields.size() == expected.size() + 1);
  CHECK(fields.back() == std::make_pair(std::string("exp_notify_nums"), std::string("2")));

  // A job imported from the PHP queue carries its fields already: notify_time
  // is re-set, dq_set_time kept, exp_notify_nums counted on.
  job.body = R"({"a":1,"notify_time":"2020-01-01 00:00:00","dq_set_time":"2019-12-31 10:00:00",)"
             R"("exp_notify_nums":1})";
  job.attempts = 2;
  fields = parse_form(callback_form(job));
  expected = {{"a", "1"},
              {"notify_time", "2026-03-01 12:00:00"},
              {"dq_set_time", "2019-12-31 10:00:00"},
              {"exp_notify_nums", "2"}};
  CHECK(fields == expected);

  job.body = "null";
  job.attempts = 1;
  CHECK(parse_form(callback_form(job)).size() == 2);
  job.body = "[1,2]";
  fields = parse_form(callback_form(job));
  REQUIRE(fields.size() == 3);
  CHECK(fields[0] == std::make_pair(std::string("body"), std::string("[1,2]")));

  // Legacy get: the same fields as JSON.
  job.body = R"({"b":2,"a":1})";
  job.attempts = 0;
  CHECK(legacy_get_data(job) ==
        R"({"b":2,"a":1,"notify_time":"2026-03-01 12:00:00","dq_set_time":"2026-03-01 11:00:00"})");
  job.body = R"("text")";
  CHECK(legacy_get_data(job) == R"("text")");
}

TEST_CASE("numeric legacy ids take the text PHP made of them") {
  CHECK(php_number_text(Json::parse("10")) == "10");
  CHECK(php_number_text(Json::parse("-7")) == "-7");
  CHECK(php_number_text(Json::parse("1.5")) == "1.5");
  CHECK(php_number_text(Json::parse("1.50")) == "1.5");
  CHECK(php_number_text(Json::parse("1e3")) == "1000");
  CHECK(php_number_text(Json::parse("10.0")) == "10");
  CHECK(php_number_text(Json::parse("0.1")) == "0.1");
  CHECK(php_number_text(Json::parse("1e20")) == "1.0E+20");
  CHECK(php_number_text(Json::parse("20191231123456789")) == "20191231123456789");
}
