// Moving from the PHP delay queue, callbacks: a topic with callback format "form" reaches an
// endpoint written like a PHP one (it reads $_POST / $_GET only) with the
// fields the PHP delay queue sent, for POST and GET, exp_notify_nums
// included on a retry; and a topic with success_json code=0 retries a 200
// {"code":500} and ends with a 200 {"code":0}.
#include <doctest/doctest.h>

#include <cstdio>
#include <ctime>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "common/core/clock.h"
#include "common/core/json.h"
#include "tests/support/callback_server.h"
#include "tests/support/e2e.h"
#include "tests/support/http_client.h"
#include "tests/support/legacy_socket.h"
#include "tests/support/redis_server.h"

using dq::Json;
using dq::test::CallbackAnswer;
using dq::test::CallbackServer;
using dq::test::DqdOptions;
using dq::test::DqdProcess;
using dq::test::LegacySocket;
using dq::test::parse_form;
using dq::test::RecordedRequest;
using Fields = std::vector<std::pair<std::string, std::string>>;

namespace {

struct Env {
  dq::test::TestRedis redis;
  CallbackServer callback;
  std::unique_ptr<DqdProcess> dqd;
  Env() {
    DqdOptions options;
    options.shards = {redis.address()};
    options.timers = 1;
    options.consumers = 1;
    dqd = std::make_unique<DqdProcess>(options);
    add("php_post", "POST", "form", "", callback.url("/php_post"));
    add("php_get", "GET", "form", "", callback.url("/php_get.php?from=dq"));
    add("coded", "POST", "json", "code=0", callback.url("/coded"));
    dqd->start();
  }
  void add(const std::string& name, const std::string& method, const std::string& format,
           const std::string& success_json, const std::string& url) {
    dq::Topic topic;
    topic.name = name;
    topic.callback_url = url;
    topic.method = method;
    topic.callback_format = format;
    topic.success_json = success_json;
    topic.retry_ms = "1200";  // time to look at a failed attempt before the retry
    dq::Status added = dqd->registry().add_topic(topic);
    REQUIRE_MESSAGE(added.is_ok(), added.message());
  }
};

Env& env() {
  static Env instance;
  return instance;
}

std::string local_text(int64_t ms) {
  time_t seconds = static_cast<time_t>(ms / 1000);
  struct tm parts {};
  localtime_r(&seconds, &parts);
  char text[32];
  strftime(text, sizeof text, "%Y-%m-%d %H:%M:%S", &parts);
  return text;
}

// What a PHP endpoint sees: $_POST for a form POST, $_GET for a GET (less
// the callback URL's own parameter "from").
Fields php_sees(const RecordedRequest& request) {
  Fields fields = parse_form(request.method == "POST" ? request.body : request.query);
  if (!fields.empty() && fields[0].first == "from") {
    fields.erase(fields.begin());
  }
  return fields;
}

std::vector<RecordedRequest> requests_to(const std::string& path) {
  std::vector<RecordedRequest> found;
  for (const auto& request : env().callback.requests()) {
    if (request.path == path) {
      found.push_back(request);
    }
  }
  return found;
}

// The first request to `path` fails: HTTP 500 (as a PHP endpoint that threw)
// or, with a first_body, a 200 with that body; later ones answer 200 with
// then_body. (A responder runs under the server's lock: it must not call
// requests().)
dq::test::Responder fail_first(const std::string& path, const std::string& first_body,
                               const std::string& then_body) {
  auto seen = std::make_shared<int>(0);
  return [=](const RecordedRequest& request, size_t) {
    CallbackAnswer answer;
    if (request.path != path) {
      return answer;
    }
    bool first = (*seen)++ == 0;
    if (first && first_body.empty()) {
      answer.status = 500;
    }
    answer.body = first ? first_body : then_body;
    return answer;
  };
}

// Adds a job the way a PHP producer did, over the legacy port, due in ~1 s;
// returns the fields the PHP queue would have sent first.
Fields add_like_php(const std::string& topic, const std::string& id, int64_t* created_ms) {
  int64_t due_s = dq::now_ms() / 1000 + 2;
  LegacySocket socket(env().dqd->legacy_port());
  // Written as text: the body's key order is the producer's (a Json would sort it).
  std::string request = R"({"cmd":"add","topic":")" + topic + R"(","id":")" + id +
                        R"(","body":{"order_id":"A 1","uid":7,"items":[1,2],"paid":true},)"
                        R"("fix_time":")" +
                        local_text(due_s * 1000) + "\"}";
  char header[8];
  snprintf(header, sizeof header, "%04zu", request.size());
  socket.send_raw(header + request);
  Json reply = socket.read_reply();
  REQUIRE(reply["code"] == 1);
  auto job = dq::test::http_request("GET", env().dqd->jobs_url(topic) + "/" + id).json();
  *created_ms = job["created_at_ms"].get<int64_t>();
  return {{"order_id", "A 1"},
          {"uid", "7"},
          {"items", "[1,2]"},
          {"paid", "1"},
          {"notify_time", local_text(due_s * 1000)},
          {"dq_set_time", local_text(*created_ms)}};
}

// The first attempt fails (HTTP 500, as a PHP endpoint that threw), the retry succeeds.
void check_form_topic(const std::string& topic, const std::string& path, const char* method) {
  int64_t created_ms = 0;
  Fields expected = add_like_php(topic, "order-" + topic, &created_ms);
  REQUIRE(dq::test::wait_until(8000, [&] { return requests_to(path).size() >= 2; }));
  dq::test::sleep_ms(300);
  auto requests = requests_to(path);
  REQUIRE(requests.size() == 2);

  const RecordedRequest& first = requests[0];
  CHECK(first.method == method);
  CHECK(php_sees(first) == expected);
  CHECK(first.header("x-dq-topic") == topic);
  CHECK(first.header("x-dq-id") == "order-" + topic);
  CHECK(first.header("x-dq-attempt") == "1");
  if (std::string(method) == "POST") {
    CHECK(first.header("content-type") == "application/x-www-form-urlencoded");
  } else {
    CHECK(first.body.empty());
  }

  // The retry: notify_time is the retry's due time, exp_notify_nums counts the failure.
  const RecordedRequest& retry = requests[1];
  Fields seen = php_sees(retry);
  REQUIRE(seen.size() == expected.size() + 1);
  CHECK(seen.back() == std::make_pair(std::string("exp_notify_nums"), std::string("1")));
  std::string notify_time = seen[4].second;
  CHECK((notify_time == local_text(retry.arrived_ms) ||
         notify_time == local_text(retry.arrived_ms - 1000)));
  expected[4].second = notify_time;
  seen.pop_back();
  CHECK(seen == expected);
  CHECK(retry.header("x-dq-attempt") == "2");
}

}  // namespace

TEST_CASE("a form topic POSTs the fields the PHP queue sent, exp_notify_nums on the retry") {
  env().callback.set_responder(fail_first("/php_post", "", ""));
  check_form_topic("php_post", "/php_post", "POST");
}

TEST_CASE("a form topic with GET sends them as query parameters beside the URL's own") {
  env().callback.set_responder(fail_first("/php_get.php", "", ""));
  check_form_topic("php_get", "/php_get.php", "GET");
  for (const auto& request : requests_to("/php_get.php")) {
    CHECK(request.query.rfind("from=dq&order_id=A%201&", 0) == 0);
  }
}

TEST_CASE("success_json code=0: a 200 {\"code\":500} is retried, a 200 {\"code\":0} ends the job") {
  env().callback.set_responder(
      fail_first("/coded", R"({"code":500,"msg":"db busy"})", R"({"code":0,"msg":"ok"})"));
  dq::test::HttpClient http;
  auto added = http.post(env().dqd->jobs_url("coded"), R"({"id":"c-1","body":{"a":1},"delay":0})");
  REQUIRE(added.status == 201);
  REQUIRE(dq::test::wait_until(5000, [] { return requests_to("/coded").size() >= 1; }));
  // The failed attempt is visible with its reason before the retry.
  Json job;
  CHECK(dq::test::wait_until(1000, [&] {
    job = http.get(env().dqd->jobs_url("coded") + "/c-1").json();
    return job.is_object() && job.contains("last_error");
  }));
  CHECK(job["last_error"].get<std::string>().find("success_json code=0 does not hold") !=
        std::string::npos);
  CHECK(job["last_error"].get<std::string>().find("code=500") != std::string::npos);
  REQUIRE(dq::test::wait_until(5000, [] { return requests_to("/coded").size() >= 2; }));
  CHECK(dq::test::wait_until(
      2000, [&] { return http.get(env().dqd->jobs_url("coded") + "/c-1").status == 404; }));
  dq::test::sleep_ms(1500);  // a third attempt would come 1.2 s after a failure
  CHECK(requests_to("/coded").size() == 2);
}
