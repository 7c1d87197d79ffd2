// A producer that retries an add after a 504 (or no answer) never gets its
// job delivered twice: the first write may have happened and the job may
// have run by the time the retry arrives; dq remembers the job's end for its
// topic's dedup_window_s and answers the retry 200 "existing" with how the
// job ended. Real parts: redis-server stalled with SIGSTOP, dqd with a timer
// and a consumer, an HTTP callback server counting every delivery.
#include <doctest/doctest.h>
#include <signal.h>

#include <atomic>
#include <mutex>
#include <set>
#include <thread>

#include "common/core/clock.h"
#include "tests/support/e2e.h"
#include "tests/support/http_client.h"
#include "tests/support/redis_server.h"
#include "tests/support/run_program.h"

using namespace dq;
using namespace dq::test;

namespace {

// What the producers saw.
struct Answers {
  std::mutex mutex;
  std::set<std::string> accepted;  // ids answered 201 or 200
  int timeouts = 0;                // 504s and requests with no answer
  int unavailable = 0;             // 503s: nothing written
  int ended = 0;                   // 200 existing with a final state
  int given_up = 0;                // ids never answered 2xx in kGiveUpMs
  std::vector<std::string> odd;    // any other answer
};

constexpr int kProducers = 16;
constexpr int kAddEveryMs = 150;
constexpr int kLoadMs = 5000;
// A producer backs off longer after an answer that leaves the outcome open
// than after a 503 (nothing written, retry soon): the retry of a write that
// happened comes after its job (due in 100-500 ms) ran, as in production.
constexpr int kRetryAfterUnknownMs = 1500;
constexpr int kRetryAfterUnavailableMs = 200;
constexpr int kGiveUpMs = 60000;

// Adds ids "<producer>-<n>" due in 100-500 ms, one every kAddEveryMs, each
// retried with the same id and body until a 2xx.
void produce(const std::string& url, int producer, int64_t stop_at_ms, Answers* answers) {
  HttpClient http;
  for (int n = 0; monotonic_ms() < stop_at_ms; ++n) {
    std::string id = std::to_string(producer) + "-" + std::to_string(n);
    std::string doc = job_doc(id, Json{{"p", producer}, {"n", n}}, 0.1 + 0.1 * (n % 5));
    int64_t give_up_at = monotonic_ms() + kGiveUpMs;
    while (true) {
      HttpResult answer = http.request("POST", url, doc, 2000);
      bool retry = false;
      int wait_ms = answer.status == 503 ? kRetryAfterUnavailableMs : kRetryAfterUnknownMs;
      {
        std::lock_guard<std::mutex> lock(answers->mutex);
        if (answer.status == 201 || answer.status == 200) {
          answers->accepted.insert(id);
          if (answer.status == 200 && answer.json().contains("state")) {
            ++answers->ended;
          }
        } else if (answer.status == 0 || answer.status == 504 || answer.status == 503) {
          ++(answer.status == 503 ? answers->unavailable : answers->timeouts);
          retry = monotonic_ms() < give_up_at;
          answers->given_up += retry ? 0 : 1;
        } else {
          answers->odd.push_back(id + ": " + std::to_string(answer.status) + " " + answer.body);
        }
      }
      if (!retry) {
        break;
      }
      sleep_ms(wait_ms);
    }
    sleep_ms(kAddEveryMs);
  }
}

}  // namespace

TEST_CASE("a producer retrying 504s while its shard stalls 3 s gets no job delivered twice") {
  TestRedis redis;
  CallbackServer callback;
  // Adds time out after 500 ms: a stall of 3 s answers 504 to adds whose
  // writes Redis runs when it resumes.
  DqdOptions options =
      one_timer_one_consumer({redis.address()}, "[redis]\ncommand_timeout_ms = 500\n");
  DqdProcess dqd(options);
  register_topic(dqd, "orders", callback.url());
  dqd.start();

  Answers answers;
  int64_t stop_at = monotonic_ms() + kLoadMs;
  std::vector<std::thread> producers;
  for (int p = 0; p < kProducers; ++p) {
    producers.emplace_back(produce, dqd.jobs_url("orders"), p, stop_at, &answers);
  }
  sleep_ms(1000);
  kill(redis.pid(), SIGSTOP);
  sleep_ms(3000);
  kill(redis.pid(), SIGCONT);
  for (auto& producer : producers) {
    producer.join();
  }

  std::set<std::string> accepted = answers.accepted;
  bool all_arrived = wait_within(60000, [&] {
    auto delivered = deliveries_by_id(callback);
    return std::all_of(accepted.begin(), accepted.end(),
                       [&](const std::string& id) { return delivered.count(id) > 0; });
  });
  sleep_ms(1500);  // a second delivery on its way shows up by now
  auto delivered = deliveries_by_id(callback);
  int lost = 0, twice = 0, unasked = 0;
  std::string twice_ids;
  for (const auto& id : accepted) {
    if (delivered.count(id) == 0) {
      ++lost;
    }
  }
  for (const auto& [id, times] : delivered) {
    if (times > 1) {
      ++twice;
      twice_ids += " " + id + " x" + std::to_string(times);
    }
    if (accepted.count(id) == 0) {
      ++unasked;
    }
  }
  MESSAGE("accepted " << accepted.size() << ", 504 or no answer " << answers.timeouts << ", 503 "
                      << answers.unavailable << ", answered as ended " << answers.ended
                      << ", delivered " << delivered.size() << ", twice " << twice << twice_ids
                      << ", lost " << lost);
  REQUIRE_MESSAGE(answers.timeouts > 0, "the stall caused no 504: this case tested nothing");
  CHECK(answers.odd.empty());
  CHECK(answers.given_up == 0);
  CHECK(all_arrived);
  CHECK(lost == 0);
  CHECK(twice == 0);
  CHECK(unasked == 0);
}

TEST_CASE("dqctl add of a job delivered a moment ago: 'already delivered', nothing added") {
  TestRedis redis;
  CallbackServer callback;
  DqdOptions options = one_timer_one_consumer({redis.address()});
  DqdProcess dqd(options);
  register_topic(dqd, "orders", callback.url());
  dqd.start();
  std::string server = "127.0.0.1:" + std::to_string(dqd.http_port());
  RunResult added = run_dqctl({"-s", server, "add", "orders", "o-1", R"({"a":1})"}, dqd.dir());
  REQUIRE_MESSAGE(added.exit_code == 0, added.err);
  REQUIRE(callback.wait_for(1, 20000));
  // Delivered, then acked: the job is gone from its shard.
  HttpClient http;
  REQUIRE(
      wait_until(10000, [&] { return http.get(dqd.jobs_url("orders") + "/o-1").status == 404; }));

  RunResult again = run_dqctl({"-s", server, "add", "orders", "o-1", R"({"a":1})"}, dqd.dir());
  CHECK_MESSAGE(again.exit_code == 0, again.err);
  CHECK(again.out.find("already delivered orders/o-1 (same body, ended ") != std::string::npos);
  RunResult as_json =
      run_dqctl({"-s", server, "--json", "add", "orders", "o-1", R"({"a":1})"}, dqd.dir());
  Json answer = Json::parse(as_json.out, nullptr, false);
  REQUIRE(answer.is_object());
  CHECK(answer["existing"] == true);
  CHECK(answer["state"] == "delivered");
  CHECK(answer["ended_at_ms"].get<int64_t>() > 0);
  sleep_ms(1000);
  CHECK(callback.count() == 1);

  // Another body is a new job, delivered too.
  RunResult other = run_dqctl({"-s", server, "add", "orders", "o-1", R"({"a":2})"}, dqd.dir());
  CHECK(other.out.find("added orders/o-1") != std::string::npos);
  CHECK(callback.wait_for(2, 20000));
}
