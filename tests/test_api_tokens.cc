// API tokens ([server] require_token = yes; server/api_auth.h): made, listed
// and deleted with dqctl; every /v1/ route and every legacy request without
// a token, with an unknown one or with one whose scope lacks the topic is
// refused (401/403, legacy code 0) and changes nothing in Redis; /healthz and
// /metrics stay open; libdqclient and dqctl send the token.
#include <doctest/doctest.h>
#include <stdlib.h>

#include <string>
#include <vector>

#include "common/core/json.h"
#include "dq/client.h"
#include "server/legacy_frame.h"
#include "tests/support/e2e.h"
#include "tests/support/http_client.h"
#include "tests/support/legacy_socket.h"
#include "tests/support/run_program.h"
#include "tests/support/shared_dqd.h"

using dq::Json;
using dq::test::contains;
using dq::test::HttpClient;
using dq::test::LegacySocket;
using dq::test::RunResult;
using dq::test::SharedDqd;

namespace {

SharedDqd& env() {
  static SharedDqd shared(
      [] {
        dq::test::DqdOptions options;
        options.extra_ini = "[server]\nrequire_token = yes\n";
        return options;
      }(),
      {{"alpha"}, {"beta"}});
  return shared;
}

RunResult dqctl(std::vector<std::string> args) {
  args.insert(args.begin(), {"-c", env().dqd->config_path()});
  return dq::test::run_dqctl(args, env().dqd->dir());
}

// A new token for `topics` ("alpha", "alpha,beta", "*"), made with dqctl.
std::string new_token(const std::string& name, const std::string& topics) {
  RunResult made = dqctl({"token", "add", name, "--topics", topics});
  REQUIRE_MESSAGE(made.exit_code == 0, made.err);
  std::string token = made.out.substr(0, made.out.find('\n'));
  REQUIRE(token.rfind("dqt_", 0) == 0);
  return token;
}

HttpClient& client_with(HttpClient& http, const std::string& token) {
  http.add_header("Authorization: Bearer " + token);
  return http;
}

std::string url(const std::string& path) { return env().dqd->base_url() + path; }

std::string job(const std::string& id) { return Json{{"id", id}, {"body", {{"n", 1}}}}.dump(); }

// Every /v1/ route, tried with whatever headers `http` sends.
struct Attempt {
  const char* method;
  std::string path;
  std::string body;
};
std::vector<Attempt> routes_of(const std::string& topic) {
  std::string jobs = "/v1/topics/" + topic + "/jobs";
  return {{"POST", jobs, job("refused-1")},
          {"POST", jobs + "/batch",
           Json{{"jobs", Json::array({Json::parse(job("refused-2"))})}}.dump()},
          {"GET", jobs + "/kept", ""},
          {"DELETE", jobs + "/kept", ""},
          {"GET", jobs + "?state=delayed", ""},
          {"GET", "/v1/topics/" + topic + "/stats", ""},
          {"GET", "/v1/topics/" + topic + "/dead", ""},
          {"DELETE", "/v1/topics/" + topic + "/dead", ""},
          {"POST", "/v1/topics/" + topic + "/dead/requeue", ""}};
}

void check_refused(HttpClient& http, int status, const std::string& error,
                   const std::string& reason_part) {
  for (const Attempt& attempt : routes_of("alpha")) {
    CAPTURE(attempt.method);
    CAPTURE(attempt.path);
    auto answer = http.request(attempt.method, url(attempt.path), attempt.body);
    CHECK(answer.status == status);
    CHECK(answer.content_type.find("application/json") != std::string::npos);
    // "error" says why (as every error does); "reason" is the why alone.
    std::string said = answer.json().value("error", "");
    CHECK(said.rfind(error + ": ", 0) == 0);
    CHECK(contains(said, reason_part));
    CHECK(said == error + ": " + answer.json().value("reason", "?"));
  }
}

Json legacy_add(const std::string& id, const std::string& token) {
  Json request{{"cmd", "add"}, {"topic", "alpha"}, {"id", id}, {"body", {{"n", 1}}}};
  if (!token.empty()) {
    request["token"] = token;
  }
  return request;
}

}  // namespace

TEST_CASE("dqctl token add, list, del; the table keeps only a hash") {
  std::string token = new_token("lister", "beta,alpha");
  RunResult listed = dqctl({"token", "list"});
  CHECK(listed.exit_code == 0);
  CHECK(contains(listed.out, "lister"));
  CHECK(contains(listed.out, "alpha,beta"));
  RunResult as_json = dqctl({"--json", "token", "list"});
  Json rows = Json::parse(as_json.out, nullptr, false);
  REQUIRE(rows.is_array());
  CHECK(!contains(as_json.out, token));
  CHECK(!contains(dq::test::read_text_file(env().dqd->sqlite_path()), token));
  CHECK(!contains(dq::test::read_text_file(env().dqd->sqlite_path() + "-wal"), token));

  RunResult again = dqctl({"token", "add", "lister", "--topics", "alpha"});
  CHECK(again.exit_code == 1);
  CHECK(contains(again.err, "exists already"));
  CHECK(dqctl({"token", "add", "bad", "--topics", "a b"}).exit_code == 1);
  CHECK(dqctl({"token", "add", "bad name", "--topics", "alpha"}).exit_code == 1);
  CHECK(dqctl({"token", "add", "nothing"}).exit_code == 2);
  CHECK(dqctl({"token", "del", "lister"}).exit_code == 0);
  RunResult gone = dqctl({"token", "del", "lister"});
  CHECK(gone.exit_code == 1);
  CHECK(contains(gone.err, "does not exist"));
  CHECK(!contains(dqctl({"token", "list"}).out, "lister"));
}

TEST_CASE("HTTP: no token, an unknown one, or one for another topic is refused; nothing changes") {
  std::string alpha = new_token("http-alpha", "alpha");
  std::string beta = new_token("http-beta", "beta");
  HttpClient good;
  REQUIRE(client_with(good, alpha).post(url("/v1/topics/alpha/jobs"), job("kept")).status == 201);
  std::string before = env().redis.dump_all();

  HttpClient none;
  check_refused(none, 401, "unauthorized", "require_token");
  CHECK(none.get(url("/v1/topics")).status == 401);
  CHECK(none.get(url("/v1/no/such/route")).status == 401);
  HttpClient unknown;
  check_refused(client_with(unknown, "dqt_not-a-token"), 401, "unauthorized", "not known");
  HttpClient other_scheme;
  other_scheme.add_header("Authorization: Basic " + alpha);
  check_refused(other_scheme, 401, "unauthorized", "require_token");
  HttpClient wrong_scope;
  check_refused(client_with(wrong_scope, beta), 403, "forbidden", "topic 'alpha'");
  CHECK(env().redis.dump_all() == before);

  // Open without a token: health and metrics (which count the refusals).
  CHECK(none.get(url("/healthz")).status == 200);
  auto metrics = none.get(url("/metrics"));
  CHECK(metrics.status == 200);
  CHECK(contains(metrics.body, "dq_auth_failures_total{protocol=\"http\",reason=\"missing\"}"));
  CHECK(contains(metrics.body, "dq_auth_failures_total{protocol=\"http\",reason=\"scope\"}"));
}

TEST_CASE("HTTP: a token works on its topics and lists only those") {
  std::string alpha = new_token("list-alpha", "alpha");
  std::string all = new_token("list-all", "*");
  HttpClient http;
  client_with(http, alpha);
  CHECK(http.post(url("/v1/topics/alpha/jobs"), job("scoped-1")).status == 201);
  CHECK(http.get(url("/v1/topics/alpha/jobs/scoped-1")).status == 200);
  CHECK(http.get(url("/v1/topics/alpha/stats")).status == 200);
  Json topics = http.get(url("/v1/topics")).json();
  REQUIRE(topics["topics"].size() == 1);
  CHECK(topics["topics"][0]["name"] == "alpha");
  CHECK(topics["total"] == 1);
  HttpClient every;
  Json both = client_with(every, all).get(url("/v1/topics")).json();
  CHECK(both["total"] == 2);
  CHECK(every.post(url("/v1/topics/beta/jobs"), job("star-1")).status == 201);
  CHECK(http.del(url("/v1/topics/alpha/jobs/scoped-1")).status == 204);
}

TEST_CASE("libdqclient sends Options::token; dqctl sends --token or DQ_TOKEN") {
  std::string alpha = new_token("client-alpha", "alpha");
  std::string server = env().server();
  dq::client::Client with({.servers = {server}, .retries = 0, .token = alpha});
  CHECK(with.add("alpha", "lib-1", "1").ok());
  dq::client::Client without({.servers = {server}, .retries = 0});
  auto refused = without.add("alpha", "lib-2", "1");
  REQUIRE(!refused.ok());
  CHECK(refused.error().code == dq::client::ErrorCode::Unauthorized);
  CHECK(contains(refused.error().message, "unauthorized"));
  auto beta = with.add("beta", "lib-3", "1");
  REQUIRE(!beta.ok());
  CHECK(beta.error().code == dq::client::ErrorCode::Forbidden);

  CHECK(dqctl({"-s", server, "--token", alpha, "add", "alpha", "ctl-1", "1"}).exit_code == 0);
  RunResult no_token = dqctl({"-s", server, "add", "alpha", "ctl-2", "1"});
  CHECK(no_token.exit_code == 1);
  CHECK(contains(no_token.err, "Unauthorized (401)"));
  setenv("DQ_TOKEN", alpha.c_str(), 1);
  RunResult from_env = dqctl({"-s", server, "get", "alpha", "ctl-1"});
  unsetenv("DQ_TOKEN");
  CHECK_MESSAGE(from_env.exit_code == 0, from_env.err);
}

TEST_CASE("legacy: the token is the request's \"token\" field; refusals change nothing") {
  std::string alpha = new_token("legacy-alpha", "alpha");
  std::string beta = new_token("legacy-beta", "beta");
  std::string before = env().redis.dump_all();
  LegacySocket socket(env().dqd->legacy_port());
  auto check_code0 = [](const Json& reply, const std::string& start) {
    CAPTURE(reply.dump());
    CHECK(reply["code"] == 0);
    CHECK(reply["msg"].get<std::string>().rfind(start, 0) == 0);
  };
  check_code0(socket.call(legacy_add("leg-1", "")), "unauthorized");
  check_code0(socket.call(legacy_add("leg-1", "dqt_wrong")), "unauthorized");
  check_code0(socket.call(legacy_add("leg-1", beta)), "forbidden");
  check_code0(socket.call(Json{{"cmd", "del"}, {"topic", "alpha"}, {"id", "kept"}}),
              "unauthorized");
  CHECK(env().redis.dump_all() == before);
  // The connection is still usable: with the right token the same add works.
  Json added = socket.call(legacy_add("leg-1", alpha));
  CHECK(added["code"] == 1);
  Json got =
      socket.call(Json{{"cmd", "get"}, {"topic", "alpha"}, {"id", "leg-1"}, {"token", alpha}});
  CHECK(got["code"] == 1);
  CHECK(got["data"]["n"] == 1);
}

TEST_CASE("a deleted token is refused within about a second") {
  std::string token = new_token("short-lived", "alpha");
  HttpClient http;
  client_with(http, token);
  CHECK(http.get(url("/v1/topics/alpha/stats")).status == 200);
  REQUIRE(dqctl({"token", "del", "short-lived"}).exit_code == 0);
  CHECK(dq::test::wait_until(
      3000, [&] { return http.get(url("/v1/topics/alpha/stats")).status == 401; }));
}
