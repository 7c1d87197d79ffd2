// The OpenAPI description (docs/openapi.json) against the server: every
// route of the server's route table is in it and nothing else; a real dqd
// (real redis-server, real callback server, require_token = yes) is driven
// through every operation, errors included, and each answer is recorded and
// validated by tests/openapi/check.js, which uses independent npm validators
// (@seriousme/openapi-schema-validator for "is it OpenAPI 3.1",
// openapi-backend with Ajv's JSON Schema 2020-12 for each answer). The
// checker itself is shown to fail on a description missing an operation, on
// an answer that does not match it, and on a description that is not 3.1.
#include <doctest/doctest.h>

#include <algorithm>
#include <fstream>
#include <set>
#include <string>
#include <vector>

#include "common/core/json.h"
#include "server/http_api.h"
#include "tests/support/callback_server.h"
#include "tests/support/dqd_process.h"
#include "tests/support/e2e.h"
#include "tests/support/http_client.h"
#include "tests/support/npm_tool.h"
#include "tests/support/redis_server.h"
#include "tests/support/run_program.h"

using namespace dq;
using namespace dq::test;

namespace {

std::string description_path() { return std::string(DQ_SOURCE_DIR) + "/docs/openapi.json"; }

Json description() {
  Json doc = Json::parse(read_text_file(description_path()), nullptr, false);
  REQUIRE_MESSAGE(doc.is_object(), "docs/openapi.json is not JSON");
  return doc;
}

std::string lower(std::string text) {
  std::transform(text.begin(), text.end(), text.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return text;
}

const std::string& checker_dir() {
  static const std::string dir = npm_tool_dir(
      "openapi", {"package.json", "package-lock.json", "check.js"}, "openapi-backend/package.json");
  return dir;
}

// Runs check.js on a description and the recorded exchanges.
RunResult check(const Json& doc, const std::string& exchanges, const std::string& scratch) {
  std::string doc_path = scratch + "/openapi.json";
  std::string exchanges_path = scratch + "/exchanges.jsonl";
  std::ofstream(doc_path) << doc.dump(2);
  std::ofstream(exchanges_path) << exchanges;
  return run_program(
      {"/usr/bin/env", "node", checker_dir() + "/check.js", doc_path, exchanges_path}, scratch);
}

// Sends requests and keeps each exchange as check.js reads it.
class Recorder {
 public:
  explicit Recorder(std::string base) : base_(std::move(base)) {}

  HttpResult send(const std::string& method, const std::string& path, const std::string& body = "",
                  const std::string& token = "", std::vector<std::string> headers = {}) {
    if (!token.empty()) {
      headers.push_back("Authorization: Bearer " + token);
    }
    HttpResult result = client_.request(method, base_ + path, body, 10000, headers);
    REQUIRE_MESSAGE(result.status != 0, method, " ", path, ": ", result.error);
    Json line{{"method", method},
              {"path", path},
              {"status", result.status},
              {"headers", result.headers},
              {"body", result.body}};
    lines_ += line.dump() + "\n";
    return result;
  }
  const std::string& lines() const { return lines_; }

 private:
  std::string base_;
  HttpClient client_;
  std::string lines_;
};

RunResult ctl(DqdProcess& dqd, std::vector<std::string> args) {
  args.insert(args.begin(), {"-c", dqd.config_path()});
  return run_dqctl(args, dqd.dir());
}

// The secret dqctl token add printed (its stdout's one line).
std::string new_token(DqdProcess& dqd, std::vector<std::string> args) {
  args.insert(args.begin(), "token");
  args.insert(args.begin() + 1, "add");
  RunResult made = ctl(dqd, args);
  REQUIRE_MESSAGE(made.exit_code == 0, made.err);
  std::string token = made.out.substr(0, made.out.find('\n'));
  REQUIRE(token.rfind("dqt_", 0) == 0);
  return token;
}

}  // namespace

TEST_CASE("the description lists every route of the server and no other") {
  Json doc = description();
  std::set<std::pair<std::string, std::string>> described;
  for (const auto& [path, item] : doc["paths"].items()) {
    for (const auto& [method, operation] : item.items()) {
      if (method == "parameters" || method == "head") {
        continue;  // HEAD is every GET route's, answered by the same handler
      }
      described.insert({method, path});
      CHECK_MESSAGE(operation.contains("operationId"), method, " ", path);
    }
  }
  std::set<std::pair<std::string, std::string>> routed;
  for (const auto& route : HttpApi::route_specs()) {
    routed.insert({lower(route.method), route.pattern});
  }
  for (const auto& route : routed) {
    CHECK_MESSAGE(described.count(route) == 1, "not in docs/openapi.json: ", route.first, " ",
                  route.second);
  }
  for (const auto& operation : described) {
    CHECK_MESSAGE(routed.count(operation) == 1, "described but not routed: ", operation.first, " ",
                  operation.second);
  }
  CHECK(routed.size() == 30);
  CHECK(doc["openapi"] == "3.1.0");
}

TEST_CASE("every operation answers as the description says, errors included") {
  TestRedis redis;
  CallbackServer receiver;
  receiver.answer_with({}, 400);  // dead_on 400: each delivery dead-letters the job
  DqdOptions options;
  options.shards = {redis.address()};
  options.timers = 1;
  options.consumers = 1;
  options.backoff_unit_ms = 100;
  options.extra_ini = "[server]\nrequire_token = yes\nmax_body_bytes = 4096\nmax_batch_jobs = 5\n";
  DqdProcess dqd(options);
  dqd.start();
  std::string admin = new_token(dqd, {"admin", "--topics", "*", "--admin"});
  std::string producer = new_token(dqd, {"producer", "--topics", "orders"});
  Recorder api(dqd.base_url());

  // Open to anyone.
  CHECK(api.send("GET", "/healthz").status == 200);
  CHECK(api.send("GET", "/metrics").status == 200);
  HttpResult served = api.send("GET", "/v1/openapi.json");
  CHECK(served.status == 200);
  CHECK(served.body == read_text_file(description_path()));  // the file, as built in
  CHECK(api.send("GET", "/v1/signing-keys").status == 200);

  // Tokens: none, and one without the admin scope for a topic write.
  HttpResult anonymous = api.send("GET", "/v1/topics");
  CHECK(anonymous.status == 401);
  CHECK(anonymous.headers.count("www-authenticate") == 1);
  std::string topic_fields = Json{
      {"callback_url", receiver.url()},
      {"dead_on", "400"},
      {"max_attempts", 1},
      {"circuit_breaker", false},
      {"signing_secret", "generate"},
      {"signing_public_key",
       "generate"}}.dump();
  HttpResult not_admin = api.send("PUT", "/v1/topics/orders", topic_fields, producer);
  CHECK(not_admin.status == 403);
  CHECK(contains(not_admin.body, "admin scope"));

  // Topics.
  HttpResult created = api.send("PUT", "/v1/topics/orders", topic_fields, admin);
  REQUIRE_MESSAGE(created.status == 201, created.body);
  CHECK(created.headers["location"] == "/v1/topics/orders");
  CHECK(created.json()["signing_secret"].get<std::string>().rfind("whsec_", 0) == 0);
  CHECK(api.send("PUT", "/v1/topics/orders", topic_fields, admin, {"If-None-Match: *"}).status ==
        409);
  Json bad_timeout{{"callback_url", receiver.url()}, {"timeout_ms", 0}};
  HttpResult refused = api.send("PUT", "/v1/topics/orders", bad_timeout.dump(), admin);
  CHECK(refused.status == 400);
  CHECK(refused.json()["field"] == "timeout_ms");
  CHECK(api.send("PUT", "/v1/topics/orders", "[1]", admin).status == 400);
  HttpResult read = api.send("GET", "/v1/topics/orders", "", producer);
  REQUIRE(read.status == 200);
  std::string etag = read.headers["etag"];
  CHECK(etag == "\"" + std::to_string(read.json()["version"].get<int64_t>()) + "\"");
  HttpResult patched =
      api.send("PATCH", "/v1/topics/orders", R"({"priority": 1})", admin, {"If-Match: " + etag});
  CHECK_MESSAGE(patched.status == 200, patched.body);
  CHECK(patched.json()["priority"] == 1);
  CHECK(api.send("PATCH", "/v1/topics/orders", R"({"priority": 3})", admin, {"If-Match: " + etag})
            .status == 409);  // stale: the edit above moved the version on
  CHECK(api.send("PATCH", "/v1/topics/ghost", R"({"priority": 3})", admin).status == 404);
  Json as_read = patched.json();
  as_read["creator"] = "openapi test";
  HttpResult replaced = api.send("PUT", "/v1/topics/orders", as_read.dump(), admin);
  CHECK_MESSAGE(replaced.status == 200, replaced.body);
  CHECK(replaced.json()["creator"] == "openapi test");
  CHECK(replaced.json()["signing_secret"] == patched.json()["signing_secret"]);  // kept, masked
  CHECK(api.send("GET", "/v1/topics", "", admin).status == 200);
  CHECK(api.send("GET", "/v1/topics?limit=0", "", admin).status == 400);
  CHECK(api.send("GET", "/v1/signing-keys?topic=orders").json()["keys"].size() == 1);
  CHECK(api.send("GET", "/v1/topics/billing", "", producer).status == 403);
  CHECK(api.send("GET", "/v1/topics/ghost", "", admin).status == 404);

  // Jobs.
  std::string job = job_doc("a", Json{{"n", 1}}, 3600);
  CHECK(api.send("POST", "/v1/topics/orders/jobs", job, producer).status == 201);
  CHECK(api.send("POST", "/v1/topics/orders/jobs", job, producer).status == 200);
  CHECK(api.send("POST", "/v1/topics/orders/jobs", job_doc("a", 2, 3600), producer).status == 409);
  CHECK(api.send("POST", "/v1/topics/orders/jobs", "{not json", producer).status == 400);
  CHECK(api.send("POST", "/v1/topics/ghost/jobs", job, admin).status == 404);
  std::string big = job_doc("big", std::string(5000, 'x'), 3600);
  CHECK(api.send("POST", "/v1/topics/orders/jobs", big, producer).status == 413);
  Json batch{{"jobs", {Json::parse(job_doc("b1", 1, 3600)), Json{{"id", ""}, {"body", 2}}}}};
  HttpResult added = api.send("POST", "/v1/topics/orders/jobs/batch", batch.dump(), producer);
  CHECK(added.status == 200);
  CHECK(added.json()["results"][1]["status"] == 400);
  Json too_many{{"jobs", Json::array()}};
  for (int i = 0; i < 6; ++i)
    too_many["jobs"].push_back(Json::parse(job_doc("m" + std::to_string(i), i, 60)));
  CHECK(api.send("POST", "/v1/topics/orders/jobs/batch", too_many.dump(), producer).status == 413);
  CHECK(api.send("GET", "/v1/topics/orders/jobs/a", "", producer).status == 200);
  CHECK(api.send("HEAD", "/v1/topics/orders/jobs/a", "", producer).status == 200);
  CHECK(api.send("HEAD", "/v1/topics/orders/jobs/nobody", "", producer).status == 404);
  CHECK(api.send("GET", "/v1/topics/orders/jobs/nobody", "", producer).status == 404);
  CHECK(api.send("GET", "/v1/topics/orders/jobs/bad%01id", "", producer).status == 400);
  CHECK(api.send("GET", "/v1/topics/orders/jobs?state=delayed", "", producer).status == 200);
  CHECK(api.send("GET", "/v1/topics/orders/jobs?state=bogus", "", producer).status == 400);
  CHECK(api.send("GET", "/v1/topics/orders/stats", "", producer).status == 200);
  // Schedules: each operation, and its refusals.
  const std::string schedules = "/v1/topics/orders/schedules";
  CHECK(api.send("POST", schedules,
                 R"({"spec": "30 2 * * *", "tz": "Europe/Paris", "body": {"t": "{{tick}}"}})",
                 admin)
            .status == 201);
  CHECK(api.send("POST", schedules, R"({"spec": "30 2 * * *"})", admin).status == 409);
  CHECK(api.send("POST", schedules, R"({"spec": "61 * * * *"})", admin).status == 400);
  CHECK(api.send("POST", schedules, R"({"spec": "@daily"})", producer).status == 403);
  CHECK(api.send("POST", "/v1/topics/ghost/schedules", R"({"spec": "@daily"})", admin).status ==
        404);
  CHECK(api.send("GET", schedules, "", producer).status == 200);
  CHECK(api.send("GET", "/v1/topics/ghost/schedules", "", admin).status == 404);
  CHECK(api.send("PATCH", schedules, R"({"spec": "30 2 * * *", "paused": true})", admin).status ==
        200);
  CHECK(api.send("PATCH", schedules, R"({"spec": "30 2 * * *"})", admin).status == 400);
  CHECK(api.send("PATCH", schedules, R"({"spec": "@hourly", "paused": true})", admin).status ==
        404);
  CHECK(api.send("DELETE", schedules, "", admin).status == 400);
  CHECK(api.send("DELETE", schedules + "?spec=30%202%20*%20*%20*", "", admin).status == 200);
  CHECK(api.send("DELETE", schedules + "?spec=30%202%20*%20*%20*", "", admin).status == 404);
  // Dependencies: a job added with after waits (GET and the listing say
  // so); a bad after is a 400; an update of it is a 409.
  HttpResult waits = api.send(
      "POST", "/v1/topics/orders/jobs",
      R"({"id": "w", "body": 1, "delay": 3600, "after": [{"topic": "orders", "id": "a"}]})",
      producer);
  CHECK_MESSAGE(waits.status == 201, waits.body);
  CHECK(waits.json()["waiting"] == true);
  HttpResult waiting = api.send("GET", "/v1/topics/orders/jobs/w", "", producer);
  CHECK(waiting.json()["waiting"]["reason"] == "dependencies");
  CHECK(api.send("GET", "/v1/topics/orders/jobs?state=waiting", "", producer).json()["total"] == 1);
  CHECK(api.send("POST", "/v1/topics/orders/jobs",
                 R"({"id": "w2", "body": 1, "after": [{"topic": "orders", "id": "w2"}]})", producer)
            .status == 400);
  CHECK(api.send("PUT", "/v1/topics/orders/jobs/w", R"({"body": 2})", producer).status == 409);
  CHECK(api.send("DELETE", "/v1/topics/orders/jobs/w", "", producer).status == 204);
  CHECK(api.send("PATCH", "/v1/topics/orders", R"({"on_dependency_dead": "release"})", admin)
            .json()["on_dependency_dead"] == "release");
  CHECK(
      api.send("PATCH", "/v1/topics/orders", R"({"on_dependency_dead": "maybe"})", admin).status ==
      400);
  CHECK(api.send("DELETE", "/v1/topics/orders/jobs/a", "", producer).status == 204);
  CHECK(api.send("DELETE", "/v1/topics/orders/jobs/a", "", producer).status == 404);
  // Update in place: 200 for a pending job, 201 when it adds one, 400 for a bad one.
  HttpResult put_new =
      api.send("PUT", "/v1/topics/orders/jobs/u", R"({"body": {"n": 1}, "delay": 3600})", producer);
  CHECK_MESSAGE(put_new.status == 201, put_new.body);
  HttpResult put_again = api.send("PUT", "/v1/topics/orders/jobs/u", R"({"body": 2})", producer);
  CHECK_MESSAGE(put_again.status == 200, put_again.body);
  CHECK(put_again.json()["previous_state"] == "delayed");
  CHECK(api.send("PUT", "/v1/topics/orders/jobs/u", R"({"delay": -1})", producer).status == 400);
  CHECK(api.send("PUT", "/v1/topics/ghost/jobs/u", R"({"body": 1})", admin).status == 404);
  CHECK(api.send("DELETE", "/v1/topics/orders/jobs/u", "", producer).status == 204);
  // Run now: a job due in an hour is due at once (then deleted before the
  // receiver's 400 would dead-letter it; 202 if its call already started).
  CHECK(api.send("POST", "/v1/topics/orders/jobs", job_doc("r", 1, 3600), producer).status == 201);
  HttpResult ran = api.send("POST", "/v1/topics/orders/jobs/r/run", "", producer);
  CHECK(ran.status == 200);
  CHECK(ran.json()["moved"] == true);
  long run_gone = api.send("DELETE", "/v1/topics/orders/jobs/r", "", producer).status;
  CHECK((run_gone == 204 || run_gone == 202));
  CHECK(api.send("POST", "/v1/topics/orders/jobs/nobody/run", "", producer).status == 404);
  CHECK(api.send("POST", "/v1/topics/orders/jobs/bad%01id/run", "", producer).status == 400);

  // Dead letters: the receiver answers 400, and dead_on 400 dead-letters at once.
  auto wait_dead = [&](int64_t count) {
    HttpClient client;
    client.add_header("Authorization: Bearer " + producer);
    bool dead = wait_until(20000, [&] {
      HttpResult listed = client.get(dqd.base_url() + "/v1/topics/orders/dead");
      return listed.status == 200 && listed.json()["total"] == count;
    });
    REQUIRE_MESSAGE(dead, "the job did not die in time");
  };
  CHECK(api.send("POST", "/v1/topics/orders/jobs", job_doc("d", 1, 0), producer).status == 201);
  wait_dead(1);
  CHECK(api.send("POST", "/v1/topics/orders/jobs/d/run", "", producer).status == 409);
  CHECK(api.send("PUT", "/v1/topics/orders/jobs/d", R"({"body": 3})", producer).status == 409);
  CHECK(api.send("GET", "/v1/topics/orders/dead", "", producer).status == 200);
  CHECK(api.send("GET", "/v1/topics/orders/dead?limit=0", "", producer).status == 400);
  CHECK(api.send("POST", "/v1/topics/orders/dead/d/requeue", "", producer).json()["requeued"] == 1);
  wait_dead(1);
  CHECK(api.send("POST", "/v1/topics/orders/dead/requeue", "", producer).json()["requeued"] == 1);
  wait_dead(1);
  CHECK(api.send("DELETE", "/v1/topics/orders/dead", "", producer).json()["purged"] == 1);

  // History: with keep_done_days, a gone job's GET is its final state
  // (EndedJob); a ttl and an expire_at are taken. (Until the topic change
  // reaches the server, a delete is not remembered: delete and ask again.)
  CHECK(api.send("PATCH", "/v1/topics/orders", R"({"keep_done_days": 1})", admin).status == 200);
  CHECK(api.send("POST", "/v1/topics/orders/jobs",
                 R"({"id": "x", "body": 1, "delay": 3600, "expire_at": "+2 hours"})", producer)
            .status == 201);
  bool ended = wait_until(20000, [&] {
    api.send("POST", "/v1/topics/orders/jobs",
             R"({"id": "h", "body": 1, "delay": 3600, "ttl": 60})", producer);
    api.send("DELETE", "/v1/topics/orders/jobs/h", "", producer);
    return api.send("GET", "/v1/topics/orders/jobs/h", "", producer).status == 200;
  });
  CHECK(ended);

  // Pull workers: a pull topic's jobs are reserved, touched, nacked and
  // acked with their tokens; a stale token, a push topic and bad
  // parameters are refused.
  HttpResult pull_topic = api.send("PUT", "/v1/topics/pulls", R"({"mode": "pull"})", admin);
  REQUIRE_MESSAGE(pull_topic.status == 201, pull_topic.body);
  CHECK(pull_topic.json()["mode"] == "pull");
  CHECK(api.send("GET", "/v1/topics/pulls/reserve?wait=0", "", admin).json()["jobs"].empty());
  CHECK(api.send("POST", "/v1/topics/pulls/jobs", job_doc("p", Json{{"n", 1}}, 0), admin).status ==
        201);
  auto reserve_pull = [&] {
    HttpResult got = api.send("GET", "/v1/topics/pulls/reserve?ttr=30&wait=10&count=5", "", admin);
    REQUIRE(got.status == 200);
    REQUIRE(got.json()["jobs"].size() == 1);
    return got.json()["jobs"][0];
  };
  Json reserved = reserve_pull();
  std::string token_body = Json{{"token", reserved["token"]}}.dump();
  CHECK(api.send("POST", "/v1/topics/pulls/jobs/p/touch",
                 Json{{"token", reserved["token"]}, {"ttr", 60}}.dump(), admin)
            .status == 200);
  CHECK(api.send("POST", "/v1/topics/pulls/jobs/p/touch",
                 Json{{"token", reserved["token"]}, {"ttr", 0}}.dump(), admin)
            .status == 400);
  HttpResult nacked =
      api.send("POST", "/v1/topics/pulls/jobs/p/nack?delay=0",
               Json{{"token", reserved["token"]}, {"error", "try later"}}.dump(), admin);
  CHECK(nacked.status == 200);
  CHECK(nacked.json()["state"] == "retrying");
  CHECK(api.send("POST", "/v1/topics/pulls/jobs/p/ack", token_body, admin).status == 409);
  Json again = reserve_pull();
  CHECK(again["attempt"] == 2);
  CHECK(
      api.send("POST", "/v1/topics/pulls/jobs/p/ack", Json{{"token", again["token"]}}.dump(), admin)
          .status == 200);
  // Many acks in one call: the stale one and a bad one get their own results.
  CHECK(api.send("POST", "/v1/topics/pulls/jobs", job_doc("q", 2, 0), admin).status == 201);
  Json q = reserve_pull();
  HttpResult many = api.send("POST", "/v1/topics/pulls/ack",
                             Json{{"acks",
                                   {{{"id", "q"}, {"token", q["token"]}},
                                    {{"id", "p"}, {"token", again["token"]}},
                                    {{"id", "p"}, {"token", "nonsense"}}}}}
                                 .dump(),
                             admin);
  REQUIRE(many.status == 200);
  CHECK(many.json()["results"][0]["state"] == "done");
  CHECK(many.json()["results"][1]["status"] == 409);
  CHECK(many.json()["results"][2]["status"] == 400);
  CHECK(api.send("POST", "/v1/topics/pulls/ack", "{}", admin).status == 400);
  CHECK(api.send("POST", "/v1/topics/orders/ack", R"({"acks": []})", producer).status == 409);
  CHECK(api.send("POST", "/v1/topics/pulls/jobs/p/nack?delay=x", token_body, admin).status == 400);
  CHECK(api.send("POST", "/v1/topics/pulls/jobs/p/nack", token_body, admin).status == 409);
  CHECK(api.send("POST", "/v1/topics/pulls/jobs/p/touch", token_body, admin).status == 409);
  CHECK(api.send("POST", "/v1/topics/pulls/jobs/p/ack", "{}", admin).status == 400);
  CHECK(api.send("POST", "/v1/topics/ghost/jobs/p/ack", token_body, admin).status == 404);
  CHECK(api.send("GET", "/v1/topics/pulls/reserve", "", producer).status == 403);
  CHECK(api.send("GET", "/v1/topics/orders/reserve", "", producer).status == 409);
  CHECK(api.send("GET", "/v1/topics/ghost/reserve", "", admin).status == 404);
  CHECK(api.send("GET", "/v1/topics/pulls/reserve?count=0", "", admin).status == 400);

  // Deleting the topic: refused while it holds a job, then with its jobs.
  CHECK(api.send("POST", "/v1/topics/orders/jobs", job_doc("z", 1, 3600), producer).status == 201);
  HttpResult holds = api.send("DELETE", "/v1/topics/orders", "", admin);
  CHECK(holds.status == 409);
  CHECK(holds.json()["jobs"].get<int>() >= 1);
  CHECK(api.send("DELETE", "/v1/topics/orders?purge=maybe", "", admin).status == 400);
  HttpResult deleted = api.send("DELETE", "/v1/topics/orders?purge=true", "", admin);
  CHECK_MESSAGE(deleted.status == 200, deleted.body);
  CHECK(deleted.json()["purged_jobs"].get<int>() >= 1);
  CHECK(api.send("DELETE", "/v1/topics/orders", "", admin).status == 404);

  // No shard: nothing can be written, and /healthz says so.
  CHECK(api.send("PUT", "/v1/topics/orders", topic_fields, admin).status == 201);
  redis.stop();
  REQUIRE(wait_until(
      10000, [&] { return http_request("GET", dqd.base_url() + "/healthz").status == 503; }));
  CHECK(api.send("GET", "/healthz").status == 503);
  CHECK(api.send("POST", "/v1/topics/orders/jobs", job_doc("u", 1, 60), producer).status == 503);
  CHECK(api.send("PUT", "/v1/topics/orders/jobs/u", R"({"body": 1})", producer).status == 503);

  // The checker passes these answers, and fails each kind of mismatch (so
  // the check cannot pass whatever it is given).
  RunResult checked = check(description(), api.lines(), dqd.dir());
  INFO(checked.out, checked.err);
  CHECK(checked.exit_code == 0);
  CHECK(contains(checked.out, "openapi check: 0 problem(s)"));

  {  // the checker fails when an operation is missing from the description
    Json doc = description();
    doc["paths"].erase("/v1/topics/{topic}/stats");
    RunResult missing = check(doc, api.lines(), dqd.dir());
    CHECK(missing.exit_code == 1);
    CHECK(contains(missing.out, "GET /v1/topics/orders/stats -> 200: no operation"));
  }
  {  // the checker fails when an answer does not match its schema
    Json doc = description();
    doc["components"]["schemas"]["Added"]["properties"]["due_at_ms"] = Json{{"type", "string"}};
    doc["components"]["schemas"]["Topic"]["required"].push_back("colour");
    RunResult wrong = check(doc, api.lines(), dqd.dir());
    CHECK(wrong.exit_code == 1);
    CHECK(contains(wrong.out, "addJob: body does not match"));
    CHECK(contains(wrong.out, "getTopic: body does not match"));
  }
  {  // the checker fails when a status or a header is not described
    Json doc = description();
    doc["paths"]["/v1/topics/{topic}/jobs/{id}"]["delete"]["responses"].erase("204");
    doc["components"]["responses"]["Unauthorized"]["headers"]["X-Not-Sent"] =
        Json{{"required", true}, {"schema", {{"type", "string"}}}};
    RunResult wrong = check(doc, api.lines(), dqd.dir());
    CHECK(wrong.exit_code == 1);
    CHECK(contains(wrong.out, "deleteJob does not describe status 204"));
    CHECK(contains(wrong.out, "header X-Not-Sent is missing"));
  }
  {  // the checker fails on a description that is not OpenAPI 3.1
    Json doc = description();
    doc["paths"]["/healthz"]["get"]["responses"]["200"].erase("description");
    RunResult invalid = check(doc, api.lines(), dqd.dir());
    CHECK(invalid.exit_code == 1);
    CHECK(contains(invalid.out, "description: not valid OpenAPI"));
  }
}
