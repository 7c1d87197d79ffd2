// One registry for every host ([registry] shared = yes): two and three real
// dqd processes, each with its own SQLite file and ports, on the same two
// real redis-servers (the first holds the shared registry). Topics, API
// tokens and admin users made on one host work on the others; a callback
// changed on one is used by every host's consumers; a delete is gone
// everywhere; two edits of the same version leave one winner and one 409; a
// host restarted with the registry's shard down serves with its last copy,
// a host with an empty SQLite file imports everything, and a host that kept
// its own registry publishes it when it starts sharing.
#include <doctest/doctest.h>

#include <algorithm>
#include <fstream>
#include <map>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "common/core/clock.h"
#include "common/core/json.h"
#include "common/http/webhook_signature.h"
#include "common/registry/signing_keys.h"
#include "tests/support/admin_client.h"
#include "tests/support/callback_server.h"
#include "tests/support/dqd_process.h"
#include "tests/support/e2e.h"
#include "tests/support/http_client.h"
#include "tests/support/redis_server.h"
#include "tests/support/run_program.h"
#include "tests/support/text_files.h"

namespace dq::test {
namespace {

constexpr const char* kPassword = "correct horse battery";
// A deadline to wait on, not a promise: the registry sync runs every 250 ms,
// and a loaded machine slows every turn of it.
constexpr int kGenerousMs = 60000;

DqdOptions host_options(const std::vector<std::string>& shards) {
  DqdOptions options;
  options.shards = shards;
  options.consumers = 1;
  options.timers = 1;
  options.admin = true;
  options.extra_ini =
      "[registry]\nshared = yes\n[server]\nrequire_token = yes\n"
      "[admin]\nuser = admin\npassword_file = admin-password\n";
  return options;
}

std::unique_ptr<DqdProcess> start_host(const std::vector<std::string>& shards) {
  auto host = std::make_unique<DqdProcess>(host_options(shards));
  std::ofstream(host->dir() + "/admin-password") << kPassword << "\n";
  host->start();
  return host;
}

RunResult dqctl(const DqdProcess& host, std::vector<std::string> args,
                const std::string& stdin_text = "") {
  args.insert(args.begin(), {"-c", host.config_path()});
  return run_dqctl(args, host.dir(), stdin_text);
}

long add_job(const DqdProcess& host, const std::string& token, const std::string& topic,
             const std::string& id) {
  HttpClient http;
  if (!token.empty()) {  // "": the host takes adds without one
    http.add_header("Authorization: Bearer " + token);
  }
  return http.post(host.jobs_url(topic), job_doc(id, Json{{"n", 1}}, 0)).status;
}

// Adds the job once: repeated only while the host answers 404 or 401 (it
// has not read the topic or the token yet: nothing written). Even the host a
// topic was made on may answer 404 for a moment after the other host took a
// job for it: its API server reads its SQLite file again every
// registry_refresh_ms, and for a name it does not know at most every 200 ms
// (and should dqctl's write of that file find it busy, the next pull brings
// the topic). Returns the last answer.
long add_once_known(const DqdProcess& host, const std::string& token, const std::string& topic,
                    const std::string& id) {
  long status = 0;
  wait_until(kGenerousMs, [&] {
    status = add_job(host, token, topic, id);
    return status != 404 && status != 401;
  });
  return status;
}

// Waits until the host takes a job for the topic; the ms it took, -1 if never.
int64_t ms_until_taken(const DqdProcess& host, const std::string& token, const std::string& topic,
                       const std::string& id) {
  int64_t start = monotonic_ms();
  bool taken = wait_until(kGenerousMs, [&] {
    long status = add_job(host, token, topic, id);
    return status >= 200 && status < 300;
  });
  return taken ? monotonic_ms() - start : -1;
}

// Calls by path, but for those of the jobs whose id starts with `except`.
std::map<std::string, int> calls_by_path(const CallbackServer& callback,
                                         const std::string& except = "") {
  std::map<std::string, int> calls;
  for (const auto& request : callback.requests()) {
    if (except.empty() || request.header("x-dq-id").rfind(except, 0) != 0) ++calls[request.path];
  }
  return calls;
}

// Whether the host's consumers made the call of job `id` (its notify log has
// the call's outcome).
bool called_by(const DqdProcess& host, const std::string& id) {
  return contains(read_logs(host.log_dir(), "notify"), " id=" + id + " ");
}

std::string new_token(const DqdProcess& host) {
  RunResult made = dqctl(host, {"token", "add", "producer", "--topics", "*"});
  REQUIRE_MESSAGE(made.exit_code == 0, made.err);
  return made.out.substr(0, made.out.find('\n'));
}

Json topic_on(const DqdProcess& host, const std::string& name) {
  RunResult shown = dqctl(host, {"--json", "topic", "show", name});
  return shown.exit_code == 0 ? Json::parse(shown.out, nullptr, false) : Json();
}

TEST_CASE("two hosts with the default config share topics") {
  TestRedis shard;
  CallbackServer callback;
  DqdOptions options;  // no [registry] line: the default
  options.shards = {shard.address()};
  options.consumers = 1;
  options.timers = 1;
  DqdProcess a(options);
  DqdProcess b(options);
  a.start();
  b.start();
  RunResult added = dqctl(a, {"topic", "add", "orders", "--callback", callback.url("/a")});
  REQUIRE_MESSAGE(added.exit_code == 0, added.err);
  // B knows it within a second or so; before, it answered 404 for ever.
  int64_t took = ms_until_taken(b, "", "orders", "on-b");
  MESSAGE("a topic made on A with the default config was known on B after " << took << " ms");
  REQUIRE(took >= 0);
  CHECK(add_once_known(a, "", "orders", "on-a") == 201);
  CHECK(callback.wait_for(2, kGenerousMs));
  CHECK(calls_by_path(callback)["/a"] == 2);
  // shared = no opts a host out: its topics stay its own.
  options.extra_ini = "[registry]\nshared = no\n";
  DqdProcess alone(options);
  alone.start();
  RunResult own = dqctl(alone, {"topic", "add", "private", "--callback", callback.url("/c")});
  REQUIRE_MESSAGE(own.exit_code == 0, own.err);
  sleep_ms(2000);  // several sync turns of A and B
  CHECK(add_job(a, "", "private", "never") == 404);
  CHECK(add_job(alone, "", "orders", "never") == 404);
}

TEST_CASE("two hosts on the same shards share topics, tokens and admin users") {
  TestRedis registry_shard;
  TestRedis other_shard;
  CallbackServer callback;
  std::vector<std::string> shards = {registry_shard.address(), other_shard.address()};
  auto a = start_host(shards);
  auto b = start_host(shards);

  // A token and a topic made on A: B takes jobs with them.
  std::string token = new_token(*a);
  RunResult added = dqctl(*a, {"topic", "add", "orders", "--callback", callback.url("/a")});
  REQUIRE_MESSAGE(added.exit_code == 0, added.err);
  int64_t took = ms_until_taken(*b, token, "orders", "first-on-b");
  MESSAGE("a topic and a token added on A were in effect on B after " << took << " ms");
  REQUIRE(took >= 0);
  WARN(took < 2000);
  REQUIRE(add_once_known(*a, token, "orders", "first-on-a") == 201);
  REQUIRE(callback.wait_for(2, kGenerousMs));
  CHECK(calls_by_path(callback)["/a"] == 2);

  // The callback changed on B: both hosts' consumers use it from then on.
  RunResult set = dqctl(*b, {"topic", "set", "orders", "--callback", callback.url("/b")});
  REQUIRE_MESSAGE(set.exit_code == 0, set.err);
  int64_t changed_at = monotonic_ms();
  REQUIRE(wait_until(kGenerousMs,
                     [&] { return topic_on(*a, "orders")["callback_url"] == callback.url("/b"); }));
  MESSAGE("the callback set on B was in A's copy after " << monotonic_ms() - changed_at << " ms");
  // Each host's consumer (one per host) reads the change on its next refresh
  // of its topic cache (registry_refresh_ms 200), however late a loaded
  // machine runs it: probe jobs until a call of each host went to /b. A
  // consumer never goes back to the callback it replaced, so every call
  // after that is /b's. The probes are left out of the counts below.
  std::map<const DqdProcess*, bool> moved = {{a.get(), false}, {b.get(), false}};
  int probes = 0;
  REQUIRE(wait_until(kGenerousMs, [&] {
    std::string id = "probe-" + std::to_string(++probes);
    REQUIRE(add_job(probes % 2 == 0 ? *a : *b, token, "orders", id) == 201);
    const DqdProcess* caller = nullptr;
    REQUIRE(wait_until(kGenerousMs, [&] {
      for (const DqdProcess* host : {a.get(), b.get()}) {
        if (called_by(*host, id)) caller = host;
      }
      return caller != nullptr;
    }));
    for (const auto& call : callback.requests()) {
      if (call.header("x-dq-id") == id && call.path == "/b") moved[caller] = true;
    }
    return moved[a.get()] && moved[b.get()];
  }));
  MESSAGE("each host's consumer called /b after " << monotonic_ms() - changed_at << " ms ("
                                                  << probes << " probe jobs)");
  int accepted = 0;
  for (int i = 0; i < 10; ++i) {
    accepted += add_job(*a, token, "orders", "via-a-" + std::to_string(i)) == 201;
    accepted += add_job(*b, token, "orders", "via-b-" + std::to_string(i)) == 201;
  }
  CHECK(accepted == 20);
  REQUIRE(callback.wait_for(2 + probes + accepted, kGenerousMs));
  sleep_ms(500);  // a duplicate would show up now
  auto calls = calls_by_path(callback, "probe-");
  MESSAGE("deliveries by path: /a " << calls["/a"] << ", /b " << calls["/b"]);
  CHECK(calls["/a"] == 2);
  CHECK(calls["/b"] == accepted);
  auto by_id = deliveries_by_id(callback);
  for (const auto& [id, count] : by_id) CHECK_MESSAGE(count == 1, id);

  // Two edits of the version both read: one wins, one is refused with 409.
  AdminClient on_a(a->admin_url());
  AdminClient on_b(b->admin_url());
  REQUIRE(wait_until(kGenerousMs, [&] { return on_a.login("admin", kPassword).status == 200; }));
  REQUIRE(wait_until(kGenerousMs, [&] { return on_b.login("admin", kPassword).status == 200; }));
  REQUIRE(wait_until(kGenerousMs, [&] {
    return on_b.call("GET", "/api/topics/orders").json()["callback_url"] == callback.url("/b");
  }));
  Json read = on_a.call("GET", "/api/topics/orders").json();
  int64_t version = read["version"].get<int64_t>();
  CHECK(version >= 2);
  REQUIRE(on_b.call("GET", "/api/topics/orders").json()["version"] == version);
  HttpResult first;
  HttpResult second;
  std::thread edit_a([&] {
    first = on_a.call("PUT", "/api/topics/orders",
                      Json{{"timeout_ms", 3000}, {"version", version}}.dump());
  });
  std::thread edit_b([&] {
    second = on_b.call("PUT", "/api/topics/orders", Json{{"timeout_ms", 4000}}.dump(), true,
                       "If-Match: \"" + std::to_string(version) + "\"");
  });
  edit_a.join();
  edit_b.join();
  MESSAGE("edits of version " << version << ": A " << first.status << ", B " << second.status);
  CHECK(((first.status == 200 && second.status == 409) ||
         (first.status == 409 && second.status == 200)));
  const HttpResult& refused = first.status == 409 ? first : second;
  CHECK(contains(refused.json()["error"].get<std::string>(), "changed by someone else"));
  int winner = first.status == 200 ? 3000 : 4000;
  REQUIRE(wait_until(kGenerousMs, [&] {
    return topic_on(*a, "orders")["timeout_ms"] == winner &&
           topic_on(*b, "orders")["timeout_ms"] == winner;
  }));
  CHECK(topic_on(*b, "orders")["version"] == version + 1);
  // A stale version is refused again, and changes nothing.
  HttpResult stale =
      on_b.call("PUT", "/api/topics/orders", Json{{"priority", 1}, {"version", version}}.dump());
  CHECK(stale.status == 409);
  CHECK(topic_on(*a, "orders")["priority"] == 2);

  // An admin user made on A logs in on B. The login is not what is retried
  // until B has the user: five failed logins of a name from one address lock
  // it there for 5 minutes (admin/login_limiter.h), so logins retried while
  // B's copy lags would lock "ops" out. B's copy is waited for instead
  // (dqctl reads B's SQLite file, as dq-admin's logins do), then one login.
  RunResult user = dqctl(*a, {"admin", "user", "add", "ops"}, "ops password 1\n");
  REQUIRE_MESSAGE(user.exit_code == 0, user.err);
  AdminClient ops_on_b(b->admin_url());
  int64_t user_at = monotonic_ms();
  CHECK(wait_until(kGenerousMs, [&] {
    return contains("\n" + dqctl(*b, {"admin", "user", "list"}).out, "\nops\n");
  }));
  MESSAGE("an admin user made on A was in B's copy after " << monotonic_ms() - user_at << " ms");
  CHECK(ops_on_b.login("ops", "ops password 1").status == 200);

  // Deleted on B: gone on A too (no job is left, so no --purge is needed).
  RunResult del = dqctl(*b, {"topic", "del", "orders"});
  REQUIRE_MESSAGE(del.exit_code == 0, del.err);
  int64_t deleted_at = monotonic_ms();
  CHECK(wait_until(kGenerousMs, [&] { return add_job(*a, token, "orders", "late") == 404; }));
  MESSAGE("a topic deleted on B was unknown on A after " << monotonic_ms() - deleted_at << " ms");
  CHECK(dqctl(*a, {"topic", "show", "orders"}).exit_code == 1);
  // A stale edit cannot bring it back.
  CHECK(
      on_a.call("PUT", "/api/topics/orders", Json{{"priority", 1}, {"version", version + 1}}.dump())
          .status == 404);
}

TEST_CASE(
    "a host serves with its last copy while the registry's shard is down; a new one imports") {
  TestRedis registry_shard;
  TestRedis other_shard;
  CallbackServer callback;
  std::vector<std::string> shards = {registry_shard.address(), other_shard.address()};
  auto a = start_host(shards);
  auto b = start_host(shards);
  std::string token = new_token(*a);
  for (const char* name : {"kept", "also-kept"}) {
    RunResult added = dqctl(*a, {"topic", "add", name, "--callback", callback.url("/kept")});
    REQUIRE_MESSAGE(added.exit_code == 0, added.err);
  }
  REQUIRE(ms_until_taken(*b, token, "also-kept", "b-knows-it") >= 0);

  // B restarts while the shard holding the shared registry is down.
  b->stop();
  registry_shard.stop();
  b->start();
  int taken = 0;
  for (int i = 0; i < 20; ++i) {
    long status = add_job(*b, token, "kept", "while-down-" + std::to_string(i));
    CHECK_MESSAGE(status != 404, "B forgot topic kept");
    taken += status == 201;
  }
  MESSAGE("B took " << taken << " of 20 jobs with the registry's shard down");
  CHECK(taken > 0);  // those placed on the other shard
  // An edit cannot reach the shared copy: refused, naming its shard, nothing written.
  RunResult edit = dqctl(*b, {"topic", "set", "kept", "--timeout-ms", "1234"});
  CHECK(edit.exit_code == 3);
  CHECK_MESSAGE(contains(edit.err, registry_shard.address()), edit.err);
  CHECK(topic_on(*b, "kept")["timeout_ms"] == 5000);

  // Back up: a host with an empty SQLite file imports every topic and the token.
  registry_shard.start();
  auto c = start_host(shards);
  int64_t took = ms_until_taken(*c, token, "kept", "c-imported-it");
  MESSAGE("a host with an empty SQLite file took jobs after " << took << " ms");
  CHECK(took >= 0);
  CHECK(topic_on(*c, "also-kept")["callback_url"] == callback.url("/kept"));
  CHECK(topic_on(*c, "kept")["version"] == topic_on(*a, "kept")["version"]);
  AdminClient admin_on_c(c->admin_url());
  CHECK(
      wait_until(kGenerousMs, [&] { return admin_on_c.login("admin", kPassword).status == 200; }));
}

TEST_CASE(
    "upgrade: a host's registry from before it shared is published; the shared copy wins a name") {
  TestRedis registry_shard;
  CallbackServer callback;
  std::vector<std::string> shards = {registry_shard.address()};
  auto a = start_host(shards);
  std::string token = new_token(*a);
  RunResult common = dqctl(*a, {"topic", "add", "common", "--callback", callback.url("/shared")});
  REQUIRE_MESSAGE(common.exit_code == 0, common.err);

  // A host that kept its own registry: two topics, one named as A's.
  DqdOptions alone = host_options(shards);
  alone.extra_ini =
      "[registry]\nshared = no\n[admin]\nuser = admin\npassword_file = admin-password\n";
  DqdProcess d(alone);
  std::ofstream(d.dir() + "/admin-password") << kPassword << "\n";
  for (const auto& [name, path] :
       {std::pair<std::string, std::string>{"legacy-only", "/local"}, {"common", "/local"}}) {
    RunResult added = dqctl(d, {"topic", "add", name, "--callback", callback.url(path)});
    REQUIRE_MESSAGE(added.exit_code == 0, added.err);
  }
  CHECK(topic_on(d, "common")["version"] == 1);  // versioned locally, never shared

  // It starts sharing: its own topic reaches A, A's version of "common" replaces its own.
  d.rewrite_config(host_options(shards));
  d.start();
  CHECK(ms_until_taken(*a, token, "legacy-only", "published") >= 0);
  CHECK(wait_until(kGenerousMs, [&] {
    return topic_on(d, "common")["callback_url"] == callback.url("/shared");
  }));
  CHECK(topic_on(*a, "common")["callback_url"] == callback.url("/shared"));
  CHECK(topic_on(*a, "legacy-only")["callback_url"] == callback.url("/local"));
  CHECK(topic_on(d, "common")["version"] == topic_on(*a, "common")["version"]);
}

// The signatures in a call's webhook-signature header that `secret` makes.
int signatures_by(const RecordedRequest& call, const std::string& secret) {
  auto key = make_hmac_key(secret, 0);
  REQUIRE(key.is_ok());
  int64_t timestamp = std::stoll(call.header("webhook-timestamp"));
  std::string mine =
      webhook_signature({*key}, timestamp * 1000, call.header("webhook-id"), timestamp, call.body);
  int found = 0;
  std::string header = call.header("webhook-signature");
  for (size_t start = 0; start < header.size();) {
    size_t space = header.find(' ', start);
    if (space == std::string::npos) space = header.size();
    found += header.substr(start, space - start) == mine;
    start = space + 1;
  }
  return found;
}

size_t signature_count(const RecordedRequest& call) {
  std::string header = call.header("webhook-signature");
  return header.empty() ? 0 : 1 + std::count(header.begin(), header.end(), ' ');
}

TEST_CASE("signing keys set on one host sign what another host delivers; a rotation sends both") {
  TestRedis registry_shard;
  TestRedis other_shard;
  CallbackServer callback;
  std::vector<std::string> shards = {registry_shard.address(), other_shard.address()};
  // A makes the keys and delivers nothing (no consumer): every call is B's.
  DqdOptions writer = host_options(shards);
  writer.consumers = 0;
  DqdProcess a(writer);
  std::ofstream(a.dir() + "/admin-password") << kPassword << "\n";
  a.start();
  auto b = start_host(shards);
  std::string token = new_token(a);
  const std::string first = "whsec_" + base64_encode(std::string(32, '1'));
  const std::string second = "whsec_" + base64_encode(std::string(32, '2'));

  RunResult added = dqctl(
      a, {"topic", "add", "signed", "--callback", callback.url("/s"), "--signing-secret", first});
  REQUIRE_MESSAGE(added.exit_code == 0, added.out, added.err);
  int64_t set_at = monotonic_ms();
  REQUIRE(wait_until(kGenerousMs, [&] {
    return topic_on(*b, "signed")["signing_secret"] == masked_secret(first);
  }));
  MESSAGE("a secret set on A was in B's copy after " << monotonic_ms() - set_at << " ms");
  // A job through B, and its call (B's consumer signs it with A's secret).
  int n = 0;
  // Each job is added once: retried only while B's API answers 404 or 401
  // (B's copy lacks the topic, or the token: A's dq-redis-checker publishes
  // a token dqctl wrote on its next turn, while the topic went to the shared
  // copy at once, so B may read the topic first; nothing is written either
  // way). ms_until_taken's retry of a timed-out add could add the id again
  // once its first job was delivered: a second job, and a second call that
  // is the test's doing, not dq's.
  auto next_call = [&] {
    std::string id = "job-" + std::to_string(++n);
    long status = 0;
    REQUIRE(wait_until(kGenerousMs, [&] {
      HttpClient http;
      http.add_header("Authorization: Bearer " + token);
      status =
          http.request("POST", b->jobs_url("signed"), job_doc(id, Json{{"n", 1}}, 0), kGenerousMs)
              .status;
      return status != 404 && status != 401;
    }));
    REQUIRE(status == 201);
    REQUIRE(wait_until(kGenerousMs, [&] { return deliveries_by_id(callback)[id] >= 1; }));
    for (const auto& call : callback.requests()) {
      if (call.header("x-dq-id") == id) return call;
    }
    FAIL("no call of " << id);
    return RecordedRequest{};
  };
  // Jobs until one is signed: B's consumers read the change on their next
  // registry refresh, a moment after B's copy has it (later on a loaded
  // machine: bounded by time, not by a count of jobs).
  auto call_where = [&](auto wanted) {
    int64_t until = monotonic_ms() + kGenerousMs;
    while (monotonic_ms() < until) {
      RecordedRequest call = next_call();
      if (wanted(call)) return call;
      sleep_ms(100);
    }
    FAIL("no call as wanted");
    return RecordedRequest{};
  };
  RecordedRequest signed_call =
      call_where([](const RecordedRequest& call) { return signature_count(call) >= 1; });
  CHECK(signature_count(signed_call) == 1);
  CHECK(signatures_by(signed_call, first) == 1);
  MESSAGE("B's first call signed with A's secret " << monotonic_ms() - set_at
                                                   << " ms after it was set");
  CHECK(signatures_by(signed_call, second) == 0);  // the check can fail

  // Rotated on A with an hour's overlap: B sends both signatures, each verifying.
  RunResult rotated =
      dqctl(a, {"topic", "set", "signed", "--signing-secret", second, "--overlap", "1h"});
  REQUIRE_MESSAGE(rotated.exit_code == 0, rotated.out, rotated.err);
  int64_t rotated_at = monotonic_ms();
  RecordedRequest both =
      call_where([](const RecordedRequest& call) { return signature_count(call) == 2; });
  MESSAGE("B sent both signatures " << monotonic_ms() - rotated_at << " ms after the rotation");
  REQUIRE(signature_count(both) == 2);
  CHECK(signatures_by(both, first) == 1);
  CHECK(signatures_by(both, second) == 1);
  // Both hosts show the same keys at the same version. B's copy has them
  // (its consumer signed with both); A's was written by dqctl after the
  // shared copy took the change, unless that write found A's file busy,
  // and then by A's next pull: waited for, not assumed.
  Json on_a, on_b;
  CHECK(wait_until(kGenerousMs, [&] {
    on_a = topic_on(a, "signed");
    on_b = topic_on(*b, "signed");
    return on_a["signing_keys"].size() == 2 && on_a["signing_keys"] == on_b["signing_keys"] &&
           on_a["version"] == on_b["version"];
  }));
  CHECK(on_a["signing_keys"] == on_b["signing_keys"]);
  CHECK(on_a["signing_keys"].size() == 2);
  CHECK(on_a["version"] == on_b["version"]);
  for (const auto& [id, count] : deliveries_by_id(callback)) CHECK_MESSAGE(count == 1, id);

  // Signing stopped on B: A's copy stops too.
  RunResult off = dqctl(*b, {"topic", "set", "signed", "--signing-secret", "off"});
  REQUIRE_MESSAGE(off.exit_code == 0, off.out, off.err);
  CHECK(wait_until(kGenerousMs, [&] { return topic_on(a, "signed")["signing_secret"] == ""; }));
}

}  // namespace
}  // namespace dq::test
