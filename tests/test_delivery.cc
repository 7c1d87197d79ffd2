// End-to-end delivery: real redis-server, real HTTP callback server, timer and
// consumer roles in their own processes. Covers lateness, the callback's
// request shape (POST and GET), the retry schedule, at-least-once after a
// consumer is killed mid-callback, no duplicates with several timers and
// consumers, offline topics and a slow callback URL.
#include <doctest/doctest.h>

#include <chrono>
#include <map>
#include <set>
#include <thread>

#include "common/core/json.h"
#include "consumer/callback_request.h"
#include "tests/delivery_world.h"

using dq::Json;
using dq::now_ms;
using dq::test::CallbackAnswer;
using dq::test::DeliveryWorld;
using dq::test::RecordedRequest;

namespace {

void sleep_ms(int ms) { std::this_thread::sleep_for(std::chrono::milliseconds(ms)); }

}  // namespace

TEST_CASE("the callback document quotes topic and id exactly as nlohmann's dump does") {
  for (std::string id : {std::string("plain:42"), std::string("q\"b\\s/"),
                         std::string("ctl\b\f\n\r\t\x01\x1f\x7f"), std::string("caf\xc3\xa9")}) {
    dq::Job job;
    job.topic = "t";
    job.id = id;
    job.body = "{}";
    Json document = Json::parse(dq::callback_json(job));
    CHECK(document["id"] == id);
    std::string text = dq::callback_json(job);
    CHECK(text.find(",\"id\":" + Json(id).dump() + ",") != std::string::npos);
  }
}

TEST_CASE("a job with delay 1 s reaches the POST callback once, less than 100 ms late") {
  DeliveryWorld world;
  world.add_topic(world.topic("orders"));
  world.start_timer();
  world.start_consumer(0);
  world.start_consumer(1);
  sleep_ms(300);  // let the roles block on their wake lists

  int64_t due = now_ms() + 1000;
  world.add_job("orders", "order:42", due, "{\"amount\":12.5,\"tags\":[\"a\"]}");
  REQUIRE(world.callback().wait_for(1, 5000));
  sleep_ms(700);  // a duplicate would show up here
  auto requests = world.callback().requests();
  REQUIRE(requests.size() == 1);
  const RecordedRequest& request = requests[0];
  int64_t lateness = request.arrived_ms - due;
  MESSAGE("lateness of a 1 s job: ", lateness, " ms");
  CHECK(lateness >= 0);
  CHECK(lateness < 100);

  CHECK(request.method == "POST");
  CHECK(request.path == "/callback");
  CHECK(request.header("content-type") == "application/json");
  CHECK(request.header("x-dq-topic") == "orders");
  CHECK(request.header("x-dq-id") == "order:42");
  CHECK(request.header("x-dq-attempt") == "1");
  Json body = Json::parse(request.body);
  CHECK(body["topic"] == "orders");
  CHECK(body["id"] == "order:42");
  CHECK(body["body"]["amount"] == 12.5);  // embedded as JSON, not as a string
  CHECK(body["body"]["tags"][0] == "a");
  CHECK(body["attempt"] == 1);
  CHECK(body["due_at_ms"] == due);
  CHECK(body["created_at_ms"].get<int64_t>() <= due - 1000 + 50);

  // Acked: the job is gone.
  auto job = world.store().get("orders", "order:42");
  REQUIRE_FALSE(job.is_ok());
  CHECK(job.status().code() == dq::Code::kNotFound);
}

TEST_CASE("a GET topic receives the fields as query parameters") {
  DeliveryWorld world;
  auto topic = world.topic("pings", "/get-hook?token=abc");
  topic.method = "GET";
  world.add_topic(topic);
  world.start_timer();
  world.start_consumer();
  int64_t due = now_ms() + 200;
  world.add_job("pings", "p1", due, "{\"text\":\"a b&c=d\"}");
  REQUIRE(world.callback().wait_for(1, 5000));
  auto request = world.callback().requests()[0];
  CHECK(request.method == "GET");
  CHECK(request.path == "/get-hook");
  CHECK(request.param("token") == "abc");
  CHECK(request.param("topic") == "pings");
  CHECK(request.param("id") == "p1");
  CHECK(Json::parse(request.param("body"))["text"] == "a b&c=d");
  CHECK(request.param("attempt") == "1");
  CHECK(request.param("due_at_ms") == std::to_string(due));
  CHECK(request.header("x-dq-attempt") == "1");
}

TEST_CASE("one reused delivery carries POST, GET and form callbacks, each exactly its own") {
  // Concurrency 1: every callback goes through the same pooled delivery and
  // easy handle, so a header, body or method left from the one before shows.
  DeliveryWorld world;
  world.config().consumer_concurrency = 1;
  world.add_topic(world.topic("long-post", "/a"));
  auto get = world.topic("get", "/b?k=1");
  get.method = "GET";
  world.add_topic(get);
  auto form = world.topic("form", "/c");
  form.callback_format = "form";
  world.add_topic(form);
  world.start_timer();
  world.start_consumer();
  std::string long_body = "{\"text\":\"" + std::string(3000, 'x') + "\",\"n\":[1,2.5]}";
  int64_t due = now_ms() + 300;
  for (int64_t round = 0; round < 2; ++round) {
    std::string n = std::to_string(round);
    world.add_job("long-post", "p" + n, due + round * 200, long_body);
    world.add_job("get", "g" + n, due + round * 200 + 50, "{\"q\":\"a b\"}");
    world.add_job("form", "f" + n, due + round * 200 + 100, "{\"k\":\"v\"}");
  }
  REQUIRE(world.callback().wait_for(6, 10000));
  auto requests = world.callback().requests();
  REQUIRE(requests.size() == 6);
  for (const RecordedRequest& request : requests) {
    std::string id = request.header("x-dq-id");
    CAPTURE(id);
    CHECK(request.header("x-dq-attempt") == "1");
    CHECK(request.header("expect").empty());
    CHECK(request.header("user-agent") == "dq-consumer");
    switch (id[0]) {
      case 'p': {
        CHECK(request.method == "POST");
        CHECK(request.path == "/a");
        CHECK(request.query.empty());
        CHECK(request.header("x-dq-topic") == "long-post");
        CHECK(request.header("content-type") == "application/json");
        CHECK(request.header("content-length") == std::to_string(request.body.size()));
        CHECK(request.body.find(",\"body\":" + long_body + ",") != std::string::npos);
        Json document = Json::parse(request.body);
        CHECK(document["id"] == id);
        CHECK(document["topic"] == "long-post");
        break;
      }
      case 'g':
        CHECK(request.method == "GET");
        CHECK(request.path == "/b");
        CHECK(request.param("k") == "1");
        CHECK(request.param("id") == id);
        CHECK(request.param("body") == "{\"q\":\"a b\"}");
        CHECK(request.header("x-dq-topic") == "get");
        CHECK(request.header("content-type").empty());
        CHECK(request.header("content-length").empty());
        CHECK(request.body.empty());
        break;
      case 'f':
        CHECK(request.method == "POST");
        CHECK(request.path == "/c");
        CHECK(request.header("x-dq-topic") == "form");
        CHECK(request.header("content-type") == "application/x-www-form-urlencoded");
        CHECK(request.form_field("k") == "v");
        CHECK(request.form_field("text").empty());
        CHECK(request.body.size() < 200);
        break;
      default:
        FAIL("unexpected id ", id);
    }
  }
}

TEST_CASE("500 twice then 200: three calls spaced 1 and 3 backoff units") {
  const int64_t unit = 300;
  DeliveryWorld world(unit);
  world.add_topic(world.topic("retry"));
  world.callback().answer_with({500, 500}, 200);
  world.start_timer();
  world.start_consumer();
  world.add_job("retry", "r1", now_ms() + 100);

  REQUIRE(world.callback().wait_for(3, 10000));
  sleep_ms(3 * unit);  // no fourth call after the success
  auto requests = world.callback().requests();
  REQUIRE(requests.size() == 3);
  for (size_t i = 0; i < 3; ++i) {
    CHECK(requests[i].header("x-dq-attempt") == std::to_string(i + 1));
    CHECK(Json::parse(requests[i].body)["attempt"] == i + 1);
  }
  int64_t first_gap = requests[1].arrived_ms - requests[0].arrived_ms;
  int64_t second_gap = requests[2].arrived_ms - requests[1].arrived_ms;
  MESSAGE("gaps: ", first_gap, " ms and ", second_gap, " ms (units of ", unit, " ms)");
  CHECK(first_gap >= unit);
  CHECK(first_gap < unit + 150);
  CHECK(second_gap >= 3 * unit);
  CHECK(second_gap < 3 * unit + 150);
  CHECK(world.store().get("retry", "r1").status().code() == dq::Code::kNotFound);
}

TEST_CASE("a topic's retry_ms schedule replaces the 2n+1 units") {
  DeliveryWorld world(10000);  // the default schedule would wait 10 s
  auto topic = world.topic("custom");
  topic.retry_ms = "200,600";
  world.add_topic(topic);
  world.callback().answer_with({503, 503, 503}, 200);
  world.start_timer();
  world.start_consumer();
  world.add_job("custom", "c1", now_ms());
  REQUIRE(world.callback().wait_for(4, 10000));
  auto requests = world.callback().requests();
  int64_t gaps[3] = {requests[1].arrived_ms - requests[0].arrived_ms,
                     requests[2].arrived_ms - requests[1].arrived_ms,
                     requests[3].arrived_ms - requests[2].arrived_ms};
  MESSAGE("gaps: ", gaps[0], ", ", gaps[1], ", ", gaps[2]);
  CHECK(gaps[0] >= 200);
  CHECK(gaps[0] < 350);
  CHECK(gaps[1] >= 600);
  CHECK(gaps[1] < 750);
  CHECK(gaps[2] >= 600);  // the last entry repeats
  CHECK(gaps[2] < 750);
}

TEST_CASE("kill -9 of a consumer mid-callback: the job is delivered again after the lease") {
  DeliveryWorld world;
  world.config().lease_margin_ms = 300;
  auto topic = world.topic("lease");
  topic.timeout_ms = 1000;  // lease = 1000 + 300 ms
  world.add_topic(topic);
  // The first call hangs (its consumer is killed meanwhile); later ones succeed.
  world.callback().set_responder([](const RecordedRequest&, size_t n) {
    CallbackAnswer answer;
    if (n == 0) {
      answer.delay_ms = 20000;
    }
    return answer;
  });
  world.start_timer();
  auto& doomed = world.start_consumer(0);
  world.add_job("lease", "l1", now_ms());
  REQUIRE(world.callback().wait_for(1, 5000));
  int64_t first = world.callback().requests()[0].arrived_ms;
  doomed.kill9();
  world.start_consumer(1);

  REQUIRE(world.callback().wait_for(2, 8000));
  sleep_ms(1500);
  auto requests = world.callback().requests();
  REQUIRE(requests.size() == 2);
  int64_t again_after = requests[1].arrived_ms - first;
  MESSAGE("delivered again ", again_after, " ms after the first call (lease 1300 ms)");
  CHECK(again_after >= 1300);
  CHECK(again_after < 1300 + 1500);
  CHECK(requests[1].header("x-dq-id") == "l1");
  CHECK(requests[1].header("x-dq-attempt") == "2");  // the lost attempt counts
  CHECK(world.store().get("lease", "l1").status().code() == dq::Code::kNotFound);
}

TEST_CASE("two timers and four consumers deliver 10,000 jobs due at once, none twice") {
  DeliveryWorld world;
  world.add_topic(world.topic("bulk"));
  world.start_timer(0);
  world.start_timer(1);
  for (int i = 0; i < 4; ++i) {
    world.start_consumer(i);
  }

  const int kJobs = 10000;
  int64_t due = now_ms() + 6000;  // room for 10,000 blocking adds under ASan
  for (int i = 0; i < kJobs; ++i) {
    world.add_job("bulk", "j" + std::to_string(i), due);
  }
  REQUIRE(now_ms() < due);  // all were added before they came due
  int64_t start = now_ms();
  bool all = world.callback().wait_for(kJobs, 40000);
  int64_t took = now_ms() - due;
  sleep_ms(1000);
  auto requests = world.callback().requests();
  MESSAGE(requests.size(), " calls, the last one ", took, " ms after the due time (waited from ",
          start - due, ")");
  CHECK(all);
  std::map<std::string, int> seen;
  for (const auto& request : requests) {
    ++seen[request.header("x-dq-id")];
  }
  CHECK(seen.size() == static_cast<size_t>(kJobs));
  int twice = 0;
  for (const auto& entry : seen) {
    twice += entry.second > 1;
  }
  CHECK(twice == 0);
  CHECK(requests.size() == static_cast<size_t>(kJobs));
  for (int i = 0; i < kJobs; i += 997) {
    CHECK(seen.count("j" + std::to_string(i)) == 1);
  }
}

TEST_CASE("an offline topic's jobs wait, and go once it is online again") {
  DeliveryWorld world;
  auto topic = world.topic("paused");
  topic.online = false;
  world.add_topic(topic);
  world.start_timer();
  world.start_consumer();
  world.add_job("paused", "p1", now_ms());
  sleep_ms(1500);
  CHECK(world.callback().count() == 0);
  auto job = world.store().get("paused", "p1");
  REQUIRE(job.is_ok());
  CHECK(job->state == dq::JobState::kReady);

  topic.online = true;
  topic.updated_at_ms = now_ms();
  REQUIRE(world.registry().update_topic(topic).is_ok());
  int64_t online_at = now_ms();
  REQUIRE(world.callback().wait_for(1, 5000));
  MESSAGE("picked up ", world.callback().requests()[0].arrived_ms - online_at,
          " ms after going online");
  CHECK(world.callback().requests()[0].header("x-dq-id") == "p1");
}

TEST_CASE("a slow callback URL does not stall other topics; priority 1 goes first") {
  DeliveryWorld world;
  world.config().consumer_concurrency = 8;
  auto slow = world.topic("slow", "/slow");
  slow.timeout_ms = 5000;
  world.add_topic(slow);
  auto fast = world.topic("fast", "/fast");
  fast.priority = 1;
  world.add_topic(fast);
  auto low = world.topic("low", "/low");
  low.priority = 3;
  world.add_topic(low);
  world.callback().set_responder([](const RecordedRequest& request, size_t) {
    CallbackAnswer answer;
    if (request.path == "/slow") {
      answer.delay_ms = 3000;
    }
    return answer;
  });
  int64_t due = now_ms() + 300;
  for (int i = 0; i < 30; ++i) {
    world.add_job("slow", "s" + std::to_string(i), due);
  }
  for (int i = 0; i < 30; ++i) {
    world.add_job("fast", "f" + std::to_string(i), due);
  }
  for (int i = 0; i < 30; ++i) {
    world.add_job("low", "l" + std::to_string(i), due);
  }
  world.start_timer();
  world.start_consumer();

  // 60 fast/low calls must not wait behind 30 slow ones (each 3 s, 8 slots).
  bool done = false;
  int64_t deadline = now_ms() + 2500;
  std::vector<RecordedRequest> requests;
  while (now_ms() < deadline && !done) {
    requests = world.callback().requests();
    int quick = 0;
    for (const auto& request : requests) {
      quick += request.path != "/slow";
    }
    done = quick == 60;
    sleep_ms(20);
  }
  CHECK(done);
  int slow_calls = 0;
  double fast_rank = 0, low_rank = 0;
  int fast_n = 0, low_n = 0;
  for (size_t i = 0; i < requests.size(); ++i) {
    if (requests[i].path == "/slow") {
      ++slow_calls;
    }
    if (requests[i].path == "/fast") {
      fast_rank += i, ++fast_n;
    }
    if (requests[i].path == "/low") {
      low_rank += i, ++low_n;
    }
  }
  MESSAGE("slow calls started: ", slow_calls, ", mean arrival rank fast ", fast_rank / fast_n,
          " low ", low_rank / low_n);
  CHECK(slow_calls >= 1);  // the slow topic got a share too
  CHECK(slow_calls <= 6);  // but at most three quarters of the 8 slots
  CHECK(fast_rank / fast_n < low_rank / low_n);
}
