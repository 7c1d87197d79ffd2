// Unit tests of the receiver-protecting rules that need no server: Retry-After
// (common/http/retry_after.h), dead_on and retry jitter
// (common/registry/delivery_rules.h), their topic validation, and the job
// record's optional deferrals field (common/store/job_meta.h).
#include <doctest/doctest.h>

#include <algorithm>

#include "common/http/retry_after.h"
#include "common/registry/delivery_rules.h"
#include "common/registry/registry.h"
#include "common/store/job_meta.h"

using namespace dq;

TEST_CASE("Retry-After: delta-seconds") {
  const int64_t now = 1700000000000;
  CHECK(parse_retry_after("1", now) == 1000);
  CHECK(parse_retry_after(" 120 ", now) == 120000);
  CHECK(parse_retry_after("0", now) == 0);
  CHECK(parse_retry_after("3600", now) == kMaxRetryAfterMs);
  CHECK(parse_retry_after("3601", now) == kMaxRetryAfterMs);  // cut to an hour
  CHECK(parse_retry_after("99999999999999999999", now) == kMaxRetryAfterMs);
  CHECK_FALSE(parse_retry_after("", now));
  CHECK_FALSE(parse_retry_after("-1", now));
  CHECK_FALSE(parse_retry_after("1.5", now));
  CHECK_FALSE(parse_retry_after("soon", now));
  CHECK_FALSE(parse_retry_after("10s", now));
}

TEST_CASE("Retry-After: HTTP-date in its three forms") {
  // Sun, 06 Nov 1994 08:49:37 GMT = 784111777
  const int64_t at = 784111777LL * 1000;
  CHECK(parse_retry_after("Sun, 06 Nov 1994 08:49:37 GMT", at - 5000) == 5000);
  CHECK(parse_retry_after("Sunday, 06-Nov-94 08:49:37 GMT", at - 5000) == 5000);
  CHECK(parse_retry_after("Sun Nov  6 08:49:37 1994", at - 5000) == 5000);
  CHECK(parse_retry_after("Sun, 06 Nov 1994 08:49:37 GMT", at + 60000) == 0);  // past: now
  CHECK(parse_retry_after("Sun, 06 Nov 1994 08:49:37 GMT", at - 86400000) == kMaxRetryAfterMs);
  CHECK_FALSE(parse_retry_after("Sun, 99 Nov 1994 08:49:37 GMT garbage", at));
}

TEST_CASE("Retry-After defers only 429 and 503") {
  CHECK(defers_by_retry_after(429));
  CHECK(defers_by_retry_after(503));
  CHECK_FALSE(defers_by_retry_after(500));
  CHECK_FALSE(defers_by_retry_after(200));
  CHECK_FALSE(defers_by_retry_after(0));
}

TEST_CASE("dead_on: parsing and matching") {
  auto parsed = parse_dead_on("400,410, 422");
  REQUIRE(parsed.is_ok());
  CHECK(*parsed == std::vector<int>{400, 410, 422});
  CHECK(parse_dead_on("")->empty());
  CHECK(is_dead_on("400,410,422", 410));
  CHECK_FALSE(is_dead_on("400,410,422", 500));
  CHECK_FALSE(is_dead_on("", 400));
  CHECK_FALSE(is_dead_on("400", 0));  // no answer at all
  for (const char* bad : {"200", "204,400", "99", "600", "4000", "40", "abc", "400,", ",400",
                          "400,,410", "-400", "400;410", "4 0"}) {
    auto refused = parse_dead_on(bad);
    CHECK_MESSAGE(!refused.is_ok(), bad);
    if (!refused.is_ok()) {
      CHECK(refused.status().message().rfind("dead_on: ", 0) == 0);
    }
  }
  CHECK(parse_dead_on("200").status().message().find("2xx") != std::string::npos);
}

TEST_CASE("retry jitter lengthens a wait, never shortens it") {
  CHECK(jittered_wait_ms(1000, 0, 0.99) == 1000);
  CHECK(jittered_wait_ms(1000, 30, 0.0) == 1000);
  CHECK(jittered_wait_ms(1000, 30, 0.5) == 1150);
  CHECK(jittered_wait_ms(1000, 30, 0.999999) == 1299);
  CHECK(jittered_wait_ms(1000, 30, 1.0) == 1300);
  CHECK(jittered_wait_ms(1000, 100, 1.0) == 2000);
  CHECK(jittered_wait_ms(1000, 500, 1.0) == 2000);  // percent is at most 100
  CHECK(jittered_wait_ms(0, 30, 0.5) == 0);
  int64_t low = INT64_MAX, high = 0;
  for (int i = 0; i < 2000; ++i) {
    int64_t wait = jittered_wait_ms(10000, 30);
    REQUIRE(wait >= 10000);
    REQUIRE(wait <= 13000);
    low = std::min(low, wait);
    high = std::max(high, wait);
  }
  CHECK(high - low > 2000);  // spread over most of [w, 1.3 w]
  CHECK(jittered_wait_ms(10000, 0) == 10000);
}

TEST_CASE("validate_topic: max_deferrals, dead_on, retry_jitter") {
  Topic topic;
  topic.name = "t";
  topic.callback_url = "http://127.0.0.1:9/cb";
  REQUIRE(validate_topic(topic).is_ok());
  CHECK(topic.max_deferrals == kDefaultMaxDeferrals);
  CHECK(topic.retry_jitter == 0);
  Topic bad = topic;
  bad.max_deferrals = -1;
  CHECK(validate_topic(bad).message().rfind("max_deferrals: ", 0) == 0);
  bad.max_deferrals = kMaxMaxDeferrals + 1;
  CHECK(validate_topic(bad).message().rfind("max_deferrals: ", 0) == 0);
  bad = topic;
  bad.retry_jitter = 101;
  CHECK(validate_topic(bad).message().rfind("retry_jitter: ", 0) == 0);
  bad.retry_jitter = -1;
  CHECK(validate_topic(bad).message().rfind("retry_jitter: ", 0) == 0);
  bad = topic;
  bad.dead_on = "200";
  CHECK(validate_topic(bad).message().rfind("dead_on: ", 0) == 0);
  Topic good = topic;
  good.max_deferrals = 0;
  good.retry_jitter = 100;
  good.dead_on = "400,410,422,503";
  CHECK(validate_topic(good).is_ok());
}

TEST_CASE("job meta: the optional eighth field counts deferrals, the ninth is the first attempt") {
  Job job;
  REQUIRE(parse_job_meta("y|2|1000|900|17||", &job));
  CHECK(job.attempts == 2);
  CHECK(job.deferrals == 0);
  REQUIRE(parse_job_meta("y|2|1000|900|17|||3\n{\"a\":1}", &job));
  CHECK(job.attempts == 2);
  CHECK(job.deferrals == 3);
  CHECK(job.body == "{\"a\":1}");
  std::string lease;
  REQUIRE(parse_job_meta("w|1|1000|900|17|res-1|5|2", &job, &lease));
  CHECK(lease == "res-1");
  CHECK(job.deferrals == 2);
  CHECK(job.first_attempt_ms == 0);  // no ninth field: not reserved since it came
  CHECK_FALSE(parse_job_meta("y|2|1000|900|17|||x", &job));
  // The ninth: when the first attempt began (max_retry_duration_s counts from it).
  REQUIRE(parse_job_meta("y|2|1000|900|17|||0|950", &job));
  CHECK(job.deferrals == 0);
  CHECK(job.first_attempt_ms == 950);
  CHECK_FALSE(parse_job_meta("y|2|1000|900|17|||3|x", &job));
  // A tenth field: when it expires (the ninth may then be empty).
  REQUIRE(parse_job_meta("y|2|1000|900|17|||3|4|5", &job));
  CHECK(job.first_attempt_ms == 4);
  CHECK(job.expires_at_ms == 5);
  REQUIRE(parse_job_meta("d|0|1000|900|17|||0||7000", &job));
  CHECK(job.first_attempt_ms == 0);
  CHECK(job.expires_at_ms == 7000);
  CHECK_FALSE(parse_job_meta("y|2|1000|900|17|||3|4|5|6", &job));
  CHECK_FALSE(parse_job_meta("y|2|1000|900|17|||3|4|", &job));
}
