// Shards in one place: a shard added to the registry (admin API, dqctl
// shard) on one host of two sharing a registry takes new jobs from both
// hosts within seconds, with no restart, while adds keep coming; nothing
// accepted is lost, delivered twice or early. A shard is removed only while
// it holds no job (a clear JSON error before), after which both hosts place
// jobs on the others again. A drained shard's delayed jobs and dead letters
// are moved to the others (each once, delivered once, not early), while ids
// being moved are deleted and added again and the checkers are killed.
// Real dqd processes, real redis-servers, a real callback server.
#include <curl/curl.h>
#include <doctest/doctest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "common/core/clock.h"
#include "common/core/json.h"
#include "common/core/shard.h"
#include "common/core/time_text.h"
#include "common/http/curl_handle.h"
#include "common/redis/redis_sync.h"
#include "common/registry/registry.h"
#include "common/registry/shard_list.h"
#include "common/registry/sql_migrations.h"
#include "common/registry/sqlite_db.h"
#include "common/store/job.h"
#include "common/store/job_mover.h"
#include "common/store/keys.h"
#include "common/store/move_calls.h"
#include "common/store/placement.h"
#include "common/store/schedule_ticks.h"
#include "tests/support/callback_server.h"
#include "tests/support/dqd_process.h"
#include "tests/support/e2e.h"
#include "tests/support/http_client.h"
#include "tests/support/process_tree.h"
#include "tests/support/redis_server.h"
#include "tests/support/run_program.h"

namespace dq::test {
namespace {

constexpr const char* kPassword = "correct horse battery";
constexpr int kGenerousMs = 20000;  // a deadline to wait on, not a promise
constexpr double kDelayS = 2.0;     // each job waits this long on its shard

size_t keep_text(char* data, size_t size, size_t count, void* user) {
  static_cast<std::string*>(user)->append(data, size * count);
  return size * count;
}

// The admin API as the page uses it: a session cookie and its CSRF token.
class Admin {
 public:
  explicit Admin(std::string base) : base_(std::move(base)) {}

  HttpResult call(const std::string& method, const std::string& path, const Json& body = nullptr) {
    CurlEasy easy(curl_easy_init());
    CurlSlist headers;
    append_header(headers, "Content-Type: application/json");
    if (!cookie_.empty()) append_header(headers, ("Cookie: " + cookie_).c_str());
    if (!csrf_.empty()) append_header(headers, ("X-CSRF-Token: " + csrf_).c_str());
    std::string text = body.is_null() ? "" : body.dump();
    HttpResult result;
    std::string head;
    curl_easy_setopt(easy.get(), CURLOPT_URL, (base_ + path).c_str());
    curl_easy_setopt(easy.get(), CURLOPT_CUSTOMREQUEST, method.c_str());
    if (!text.empty()) {
      curl_easy_setopt(easy.get(), CURLOPT_POSTFIELDS, text.c_str());
      curl_easy_setopt(easy.get(), CURLOPT_POSTFIELDSIZE, static_cast<long>(text.size()));
    }
    curl_easy_setopt(easy.get(), CURLOPT_HTTPHEADER, headers.get());
    curl_easy_setopt(easy.get(), CURLOPT_WRITEFUNCTION, keep_text);
    curl_easy_setopt(easy.get(), CURLOPT_WRITEDATA, &result.body);
    curl_easy_setopt(easy.get(), CURLOPT_HEADERFUNCTION, keep_text);
    curl_easy_setopt(easy.get(), CURLOPT_HEADERDATA, &head);
    curl_easy_setopt(easy.get(), CURLOPT_TIMEOUT_MS, 10000L);
    if (curl_easy_perform(easy.get()) == CURLE_OK) {
      curl_easy_getinfo(easy.get(), CURLINFO_RESPONSE_CODE, &result.status);
    }
    size_t cookie = head.find("Set-Cookie: ");
    if (cookie == std::string::npos) cookie = head.find("set-cookie: ");
    if (cookie != std::string::npos) {
      std::string line = head.substr(cookie + 12);
      cookie_ = line.substr(0, line.find_first_of(";\r\n"));
    }
    return result;
  }

  long login() {
    HttpResult answer =
        call("POST", "/api/login", Json{{"user", "admin"}, {"password", kPassword}});
    if (answer.status == 200) csrf_ = answer.json()["csrf"].get<std::string>();
    return answer.status;
  }

 private:
  std::string base_;
  std::string cookie_;
  std::string csrf_;
};

// Removes a drained shard from the admin page once it may be: a shard is
// removed only after it has drained for kDrainSettleMs (a host may still
// place on it before then) and holds nothing, and each refusal before is a
// 409 saying which.
HttpResult remove_when_settled(Admin& admin, const std::string& address) {
  HttpResult removed;
  int refusals = 0;
  wait_until(kGenerousMs, [&] {
    removed = admin.call("DELETE", "/api/shards/" + address);
    if (removed.status != 409) return true;
    // Either it has not drained long enough, or a host that had not yet seen
    // the drain placed a job on it, which the mover moves next, or (on a busy
    // machine) the shard did not answer its job count within the test's 1 s
    // command timeout; every one leaves the shard in place.
    std::string error = Json::parse(removed.body, nullptr, false).value("error", "");
    bool too_soon = error.find("started draining less than") != std::string::npos;
    bool not_removed = error.find("not removed") != std::string::npos;
    bool holds = error.find("still holds") != std::string::npos;
    bool unanswered = error.find("cannot be asked whether it holds jobs") != std::string::npos;
    CHECK_MESSAGE((too_soon || (not_removed && (holds || unanswered))), removed.body);
    ++refusals;
    sleep_ms(500);
    return false;
  });
  MESSAGE("removed after " << refusals << " refusal(s) while the drain settled");
  return removed;
}

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

RunResult dqctl(const DqdProcess& host, std::vector<std::string> args) {
  args.insert(args.begin(), {"-c", host.config_path()});
  return run_dqctl(args, host.dir(), "");
}

// A producer token for every topic, made on `host`.
std::string producer_token(const DqdProcess& host) {
  RunResult made = dqctl(host, {"token", "add", "producer", "--topics", "*"});
  REQUIRE_MESSAGE(made.exit_code == 0, made.err);
  return made.out.substr(0, made.out.find('\n'));
}

// Waits until `address` is active in the host's shard list: it joined, and
// the checker moved the jobs whose home it became and ended the change.
bool wait_active(const DqdProcess& host, const std::string& address) {
  return wait_until(kGenerousMs, [&] {
    RunResult shown = dqctl(host, {"--json", "shard", "list"});
    Json list = Json::parse(shown.out, nullptr, false);
    for (const auto& shard : list.is_array() ? list : Json::array()) {
      if (shard.value("name", "") == address) return shard.value("state", "") == "active";
    }
    return false;
  });
}

// Jobs of each topic the shard holds now, any state ({dq}:counts).
std::map<std::string, int64_t> jobs_by_topic(TestRedis& redis) {
  std::map<std::string, int64_t> out;
  auto reply = redis.command({"HGETALL", "{dq}:counts"});
  for (size_t i = 0; i + 1 < reply->elements; i += 2) {
    std::string field(reply->element[i]->str, reply->element[i]->len);
    out[field.substr(0, field.rfind(':'))] += std::stoll(reply->element[i + 1]->str);
  }
  return out;
}

// Adds jobs to both hosts, one topic each, until stopped; remembers every
// id accepted (201), unknown (504) or refused, and when it was sent.
class Load {
 public:
  Load(const DqdProcess& a, const DqdProcess& b, std::string token)
      : a_(a), b_(b), token_(std::move(token)) {
    thread_ = std::thread([this] { run(); });
  }
  ~Load() { stop(); }

  void stop() {
    stop_ = true;
    if (thread_.joinable()) thread_.join();
  }
  std::map<std::string, int64_t> accepted() const {
    std::lock_guard<std::mutex> lock(mutex_);
    return accepted_;
  }
  std::map<std::string, int64_t> unknown() const {
    std::lock_guard<std::mutex> lock(mutex_);
    return unknown_;
  }
  int refused() const { return refused_; }
  // The refusals by status, "503 x12 409 x1".
  std::string refusals() const {
    std::lock_guard<std::mutex> lock(mutex_);
    std::string out;
    for (const auto& [status, n] : refused_by_status_) {
      out += (out.empty() ? "" : " ") + std::to_string(status) + " x" + std::to_string(n);
    }
    return out;
  }

 private:
  void run() {
    HttpClient http;
    http.add_header("Authorization: Bearer " + token_);
    for (int n = 0; !stop_; ++n) {
      for (int k = 0; k < 2; ++k) {  // a and b may be the same host
        const DqdProcess* host = k == 0 ? &a_ : &b_;
        std::string topic = k == 0 ? "from-a" : "from-b";
        std::string id = topic + "-" + std::to_string(n);
        int64_t sent = wall_ms();
        long status = http.post(host->jobs_url(topic), job_doc(id, Json{{"n", n}}, kDelayS)).status;
        std::lock_guard<std::mutex> lock(mutex_);
        if (status == 201) {
          accepted_[id] = sent;
        } else if (status == 504) {
          unknown_[id] = sent;
        } else {
          ++refused_;
          ++refused_by_status_[status];
          if (first_refusal_.empty()) first_refusal_ = std::to_string(status) + " " + id;
        }
      }
      sleep_ms(10);
    }
  }

  const DqdProcess& a_;
  const DqdProcess& b_;
  std::string token_;
  std::atomic<bool> stop_{false};
  std::atomic<int> refused_{0};
  mutable std::mutex mutex_;
  std::map<std::string, int64_t> accepted_;
  std::map<std::string, int64_t> unknown_;
  std::map<long, int> refused_by_status_;
  std::string first_refusal_;
  std::thread thread_;
};

// Adds job `id` (due now) once the host knows the token and topic: repeated
// only while the answer is 401 or 404 (nothing written), never after a 201 or a 504
// (a second add of a delivered job is a second job). The last status.
long add_once_known(HttpClient& http, const std::string& jobs_url, const std::string& id) {
  long status = 0;
  wait_until(kGenerousMs, [&] {
    status = http.post(jobs_url, job_doc(id, Json{{"n", 0}}, 0)).status;
    return status != 401 && status != 404;
  });
  return status;
}

// Says when each delivery of `id` arrived (ms after its add was sent), its
// attempt and whether its answer was sent: what a duplicate's cause needs.
void describe_deliveries(const CallbackServer& callback, const std::string& id, int64_t sent) {
  std::string out;
  for (const auto& request : callback.requests()) {
    if (request.header("x-dq-id") != id) continue;
    out += " +" + std::to_string(request.arrived_ms - sent) + " ms attempt " +
           request.header("x-dq-attempt") + (request.answered ? " answered;" : " not answered;");
  }
  MESSAGE("delivered more than once: " << id << " (added at wall ms " << sent << "):" << out);
}

// Every accepted job delivered once and not before its delay; an unknown
// one at most once. Returns the deliveries seen.
size_t check_deliveries(const CallbackServer& callback, const Load& load) {
  auto accepted = load.accepted();
  auto unknown = load.unknown();
  std::map<std::string, int> delivered;
  int early = 0;
  for (const auto& request : callback.requests()) {
    std::string id = request.header("x-dq-id");
    ++delivered[id];
    auto sent = accepted.count(id) ? accepted[id] : unknown.count(id) ? unknown[id] : -1;
    if (sent >= 0 && request.arrived_ms < sent + static_cast<int64_t>(kDelayS * 1000)) ++early;
  }
  int lost = 0, twice = 0, stray = 0;
  for (const auto& [id, sent] : accepted) {
    lost += delivered[id] == 0;
  }
  for (const auto& [id, count] : delivered) {
    twice += count > 1;
    if (count > 1) {
      describe_deliveries(callback, id,
                          accepted.count(id)  ? accepted[id]
                          : unknown.count(id) ? unknown[id]
                                              : 0);
    }
    stray += id.rfind("from-", 0) == 0 && accepted.count(id) == 0 && unknown.count(id) == 0;
  }
  MESSAGE("accepted " << accepted.size() << ", unknown " << unknown.size() << ", refused "
                      << load.refused() << " (" << load.refusals() << "); delivered "
                      << delivered.size() << " ids, lost " << lost << ", twice " << twice
                      << ", early " << early << ", stray " << stray);
  CHECK(lost == 0);
  CHECK(twice == 0);
  CHECK(early == 0);
  CHECK(stray == 0);
  return callback.count();
}

TEST_CASE(
    "shards listed before registry shards took jobs stay unused; new ones join, move in, "
    "settle; a drained one leaves, drains, is drained") {
  char pattern[] = "/tmp/dq-shard-list-XXXXXX";
  REQUIRE(mkdtemp(pattern) != nullptr);
  std::string path = std::string(pattern) + "/dq.db";
  {
    // A registry at migration 11 with a shard its old admin form listed.
    auto db = open_sqlite(path);
    REQUIRE(db.is_ok());
    for (const SqlMigration& migration : kSqlMigrations) {
      if (migration.version <= 11) REQUIRE(exec_sql(db->get(), migration.sql).is_ok());
    }
    REQUIRE(exec_sql(db->get(), "PRAGMA user_version = 11").is_ok());
    REQUIRE(exec_sql(db->get(),
                     "INSERT INTO shards (address, password, enabled, created_at_ms) "
                     "VALUES ('10.0.0.9:6379', '', 1, 1)")
                .is_ok());
  }
  auto registry = Registry::open(path);
  REQUIRE(registry.is_ok());
  REQUIRE((*registry)->add_extra_shard("10.0.0.10:6379", "").is_ok());
  auto rows = read_registry_shards((*registry)->db());
  REQUIRE(rows.is_ok());
  REQUIRE(rows->size() == 2);
  CHECK((*rows)[0].state == "listed");
  CHECK((*rows)[1].state == "moving");
  using Roles = std::map<std::string, ShardRole>;
  Config config;
  config.shards = {ShardAddress{"10.0.0.1", 6379, ""}};
  int64_t added = (*rows)[1].changed_at_ms;
  CHECK(added == (*rows)[1].created_at_ms);
  apply_registry_shards(*rows, added + 1000, &config);
  CHECK(shard_names(config.shards) == std::vector<std::string>{"10.0.0.1:6379", "10.0.0.10:6379"});
  CHECK(config.file_shards == std::vector<std::string>{"10.0.0.1:6379"});
  CHECK(config.shard_roles == Roles{{"10.0.0.10:6379", ShardRole::kJoining}});
  CHECK(shown_state((*rows)[1], added + 1000) == "joining");
  config.shards = {ShardAddress{"10.0.0.1", 6379, ""}};
  apply_registry_shards(*rows, added + kShardJoinMs, &config);
  CHECK(config.shard_roles == Roles{{"10.0.0.10:6379", ShardRole::kMovingIn}});
  CHECK(shown_state((*rows)[1], added + kShardJoinMs) == "moving");
  REQUIRE(set_registry_shard_state((*registry)->db(), "10.0.0.10:6379", "active").is_ok());
  REQUIRE(set_registry_shard_state((*registry)->db(), "10.0.0.10:6379", "draining").is_ok());
  CHECK(set_registry_shard_state((*registry)->db(), "10.0.0.10:6379", "gone").code() ==
        Code::kInvalid);
  rows = read_registry_shards((*registry)->db());
  int64_t drained = (*rows)[1].changed_at_ms;
  CHECK(drained >= added);
  config.shards = {ShardAddress{"10.0.0.1", 6379, ""}};
  apply_registry_shards(*rows, drained, &config);
  CHECK(config.shards.size() == 2);
  CHECK(config.shard_roles == Roles{{"10.0.0.10:6379", ShardRole::kLeaving}});
  config.shards = {ShardAddress{"10.0.0.1", 6379, ""}};
  apply_registry_shards(*rows, drained + kShardJoinMs, &config);
  CHECK(config.shard_roles == Roles{{"10.0.0.10:6379", ShardRole::kDraining}});
  CHECK(shown_state((*rows)[1], drained + kShardJoinMs) == "draining");
  REQUIRE(set_registry_shard_state((*registry)->db(), "10.0.0.10:6379", "drained").is_ok());
  // A config-file shard drained gets a row of its own; the file still names
  // its address.
  REQUIRE((*registry)->add_extra_shard("10.0.0.1:6379", "", "draining").is_ok());
  rows = read_registry_shards((*registry)->db());
  config.shards = {ShardAddress{"10.0.0.1", 6379, ""}};
  apply_registry_shards(*rows, now_ms() + kShardJoinMs, &config);
  CHECK(shard_names(config.shards) == std::vector<std::string>{"10.0.0.1:6379", "10.0.0.10:6379"});
  CHECK(config.shard_roles ==
        Roles{{"10.0.0.1:6379", ShardRole::kDraining}, {"10.0.0.10:6379", ShardRole::kDrained}});
  CHECK(in_config_file(config, "10.0.0.1:6379"));
  CHECK_FALSE(in_config_file(config, "10.0.0.10:6379"));
  registry->reset();
  std::filesystem::remove_all(pattern);
}

TEST_CASE(
    "a shard added from the admin page under load takes its share from every host, the jobs whose "
    "home it became move to it; drained, it empties") {
  TestRedis registry_shard;
  TestRedis other_shard;
  TestRedis new_shard;
  CallbackServer callback;
  std::vector<std::string> shards = {registry_shard.address(), other_shard.address()};
  auto a = start_host(shards);
  auto b = start_host(shards);
  std::string token = producer_token(*a);
  for (const char* topic : {"from-a", "from-b", "later"}) {
    RunResult added =
        dqctl(*a, {"topic", "add", topic, "--callback", callback.url("/" + std::string(topic))});
    REQUIRE_MESSAGE(added.exit_code == 0, added.err);
  }
  // Both hosts know the token and topics (the shared registry's pull): B
  // took a job, and A knows the last topic added (each API process reads
  // the registry on its own, a moment after the write).
  {
    HttpClient http;
    http.add_header("Authorization: Bearer " + token);
    REQUIRE(add_once_known(http, b->jobs_url("from-b"), "warm-b") == 201);
    REQUIRE(wait_until(kGenerousMs,
                       [&] { return http.get(a->base_url() + "/v1/topics/later").status == 200; }));
  }
  // 600 jobs due in 30-45 s whose home the new shard will be: added now,
  // they sit on their previous homes until the mover brings them to it.
  std::vector<ShardAddress> all;
  for (const auto& name : {registry_shard.address(), other_shard.address(), new_shard.address()}) {
    ShardAddress address;
    parse_host_port(name, &address.host, &address.port);
    all.push_back(address);
  }
  std::map<std::string, int64_t> later_due;  // id -> earliest allowed delivery (wall ms)
  {
    HttpClient http;
    http.add_header("Authorization: Bearer " + token);
    for (int n = 0; later_due.size() < 600; ++n) {
      std::string id = "later-" + std::to_string(n);
      if (shard_order(all, job_key("later", id)).front() != 2) continue;
      double delay = 30 + (n % 16);
      int64_t sent = wall_ms();
      REQUIRE(http.post(a->jobs_url("later"), job_doc(id, Json{{"n", n}}, delay)).status == 201);
      later_due[id] = sent + static_cast<int64_t>(delay * 1000);
    }
  }

  Admin admin(a->admin_url());
  REQUIRE(admin.login() == 200);
  // Bad input: a clear JSON error, nothing changes.
  HttpResult bad = admin.call("POST", "/api/shards", Json{{"address", "nope"}});
  CHECK(bad.status == 400);
  CHECK(bad.json()["field"] == "address");
  HttpResult listed_twice =
      admin.call("POST", "/api/shards", Json{{"address", other_shard.address()}});
  CHECK(listed_twice.status == 409);
  HttpResult dead = admin.call("POST", "/api/shards", Json{{"address", "127.0.0.1:1"}});
  CHECK(dead.status == 503);
  CHECK(dead.json()["error"].get<std::string>().find("cannot be reached") != std::string::npos);

  Load load(*a, *b, token);
  sleep_ms(1500);
  int64_t before_add = wall_ms();
  HttpResult added = admin.call("POST", "/api/shards", Json{{"address", new_shard.address()}});
  REQUIRE_MESSAGE(added.status == 201, added.body);
  int64_t added_at = monotonic_ms();
  // Joining: asked and read by every host, given no job for its first 3 s.
  int joining_jobs = 0;
  while (wall_ms() < before_add + 2500) {
    for (const auto& [topic, jobs] : jobs_by_topic(new_shard)) joining_jobs += jobs > 0;
    sleep_ms(50);
  }
  CHECK(joining_jobs == 0);
  // Both hosts place jobs on it: each host adds only its own topic.
  bool both = wait_until(kGenerousMs, [&] {
    auto held = jobs_by_topic(new_shard);
    return held["from-a"] > 0 && held["from-b"] > 0;
  });
  int64_t took = monotonic_ms() - added_at;
  MESSAGE("the new shard held jobs from both hosts " << took << " ms after it was added");
  CHECK(both);
  WARN(took < 5000);
  // The jobs whose home it became are moved to it, each once, and the
  // checker makes it active: no host asks their previous homes any more.
  bool settled = wait_active(*b, new_shard.address());
  MESSAGE("the new shard was active " << monotonic_ms() - added_at << " ms after it was added");
  CHECK(settled);
  CHECK(jobs_by_topic(new_shard)["later"] == static_cast<int64_t>(later_due.size()));
  CHECK(jobs_by_topic(registry_shard)["later"] == 0);
  CHECK(jobs_by_topic(other_shard)["later"] == 0);
  sleep_ms(1500);  // the load goes on with three shards

  // While it holds jobs it is not removed: a clear JSON error from dqctl.
  RunResult refused = dqctl(*b, {"--json", "shard", "remove", new_shard.address()});
  CHECK(refused.exit_code == 1);
  Json error = Json::parse(refused.out, nullptr, false);
  CHECK(error.is_object());
  CHECK(error.value("error", "").find("holds") != std::string::npos);
  RunResult listed = dqctl(*b, {"--json", "shard", "list"});
  REQUIRE_MESSAGE(listed.exit_code == 0, listed.err);
  Json list = Json::parse(listed.out, nullptr, false);
  REQUIRE(list.is_array());
  REQUIRE(list.size() == 3);
  CHECK(list[2]["name"] == new_shard.address());
  CHECK(list[2]["source"] == "registry");
  CHECK(list[2]["state"] == "active");

  // Drained under load: no host gives it a new job, and its jobs move to
  // their homes (those due within 10 s are delivered from it), while both
  // hosts keep adding.
  RunResult drained = dqctl(*b, {"--json", "shard", "drain", new_shard.address()});
  REQUIRE_MESSAGE(drained.exit_code == 0, drained.err);
  int64_t drained_at = monotonic_ms();
  auto empty = [](TestRedis& redis) {
    for (const auto& [topic, jobs] : jobs_by_topic(redis)) {
      if (jobs > 0) return false;
    }
    return true;
  };
  CHECK(wait_until(kGenerousMs, [&] { return empty(new_shard); }));
  MESSAGE("the drained shard was empty under load after " << monotonic_ms() - drained_at << " ms");
  HttpResult removed = remove_when_settled(admin, new_shard.address());
  CHECK_MESSAGE(removed.status == 200, removed.body);
  sleep_ms(2500);  // both masters reload without it; the load goes on
  CHECK(empty(new_shard));
  RunResult after = dqctl(*a, {"--json", "shard", "list"});
  CHECK(Json::parse(after.out, nullptr, false).size() == 2);

  load.stop();
  size_t expected = load.accepted().size() + 1 + later_due.size();  // + warm-b
  REQUIRE(callback.wait_for(expected, 120000));
  // Unknown adds may still be delivered: wait until the shards hold no job.
  REQUIRE(wait_until(kGenerousMs, [&] {
    return empty(registry_shard) && empty(other_shard) && empty(new_shard);
  }));
  sleep_ms(1000);  // a duplicate would show up now
  std::map<std::string, int> delivered;
  int early = 0;
  for (const auto& request : callback.requests()) {
    std::string id = request.header("x-dq-id");
    if (later_due.count(id) == 0) continue;
    ++delivered[id];
    early += request.arrived_ms < later_due[id];
  }
  int lost = 0, twice = 0;
  for (const auto& [id, due] : later_due) {
    lost += delivered[id] == 0;
    twice += delivered[id] > 1;
  }
  MESSAGE("jobs moved to the new shard and off it again: " << later_due.size() << " added, lost "
                                                           << lost << ", twice " << twice
                                                           << ", early " << early);
  CHECK(lost == 0);
  CHECK(twice == 0);
  CHECK(early == 0);
  check_deliveries(callback, load);
}

// Keys a shard holds that only jobs make (records, due sets, dead sets,
// bodies, errors, marks of a move; store v3's held sets).
size_t job_keys(TestRedis& redis) {
  size_t n = 0;
  for (const char* pattern : {"{dq}:jobs*", "{dq}:due*", "{dq}:dead:*", "{dq}:bodies",
                              "{dq}:errors", "{dq}:held:*", "{dq}:moving", "{dq}:ready:*"}) {
    auto reply = redis.command({"KEYS", pattern});
    n += reply->elements;
  }
  return n;
}

// Runs the move's scripts as a mover that dies at three points would have,
// on the ids later_ids[6k + 1] (k < 90), and leaves its lease to a pid gone.
void simulate_dead_mover(const std::vector<ShardAddress>& all,
                         const std::vector<std::string>& later_ids) {
  std::vector<RedisConnection> shard;
  for (const auto& address : all) shard.emplace_back(address, 2000, 5000);
  std::vector<std::string> names = shard_names(all);
  for (int group = 0; group < 3; ++group) {
    std::vector<std::pair<std::string, std::string>> pairs;
    for (int k = group * 30; k < group * 30 + 30; ++k) {
      std::string key = job_key("later", later_ids[6 * k + 1]);
      auto order = shard_order(all, key);
      pairs.emplace_back(key, all[order[0] == 2 ? order[1] : order[0]].name());
    }
    auto marked = shard[2].run(move_mark_call(pairs, kMoveMarginMs));
    REQUIRE(marked.is_ok());
    REQUIRE((*marked)->elements == 9 * pairs.size());
    if (group == 0) continue;  // died after the mark
    std::map<size_t, std::vector<MarkedJob>> by_target;
    for (const MarkedJob& job : marked_jobs_of(marked->get())) {
      size_t target = std::find(names.begin(), names.end(), job.target) - names.begin();
      by_target[target].push_back(job);
    }
    for (const auto& [target, jobs] : by_target) {
      std::vector<const MarkedJob*> list;
      for (const auto& job : jobs) list.push_back(&job);
      auto written = shard[target].run(move_in_call(list));
      REQUIRE(written.is_ok());
      REQUIRE((*written)->type == REDIS_REPLY_ARRAY);
    }
    if (group == 1) continue;  // died after writing them on their targets
    std::vector<std::pair<std::string, std::string>> ends;
    for (const auto& [key, target] : pairs) ends.emplace_back(key, "done");
    auto done = shard[2].run(move_done_call(ends));
    REQUIRE(done.is_ok());  // died after ending the moves: nothing left to do
  }
  pid_t gone = fork();
  if (gone == 0) _exit(0);
  REQUIRE(gone > 0);
  REQUIRE(waitpid(gone, nullptr, 0) == gone);
  char host[256] = {};
  gethostname(host, sizeof(host) - 1);
  auto lease = shard[2].command(
      {"SET", "{dq}:mover", std::string(host) + ":" + std::to_string(gone), "PX", "120000"});
  REQUIRE(lease.is_ok());
}

// The topics of the move tests' load (from-a, from-b, later) calling
// `callback`, and a producer token for them; returns the token.
std::string add_load_topics(DqdProcess& host, CallbackServer& callback) {
  std::string token = producer_token(host);
  for (const char* topic : {"from-a", "from-b", "later"}) {
    RunResult added =
        dqctl(host, {"topic", "add", topic, "--callback", callback.url("/" + std::string(topic))});
    REQUIRE_MESSAGE(added.exit_code == 0, added.err);
  }
  return token;
}

int64_t counted(TestRedis& redis, const std::string& field) {
  auto reply = redis.command({"HGET", "{dq}:counts", field});
  return reply->type == REDIS_REPLY_STRING ? std::stoll(reply->str) : 0;
}

TEST_CASE("a drained shard's delayed jobs and dead letters move to the others, once each") {
  TestRedis first;
  TestRedis second;
  TestRedis drained;
  CallbackServer callback;
  std::vector<std::string> shards = {first.address(), second.address()};
  auto a = start_host(shards);
  auto b = start_host(shards);
  std::string token = add_load_topics(*a, callback);
  // Dead letters made deterministically: 410 is a dead_on status (dead at
  // once), and no circuit breaker stops calling the receiver.
  RunResult failing = dqctl(*a, {"topic", "add", "dying", "--callback", callback.url("/fail"),
                                 "--dead-on", "410", "--circuit-breaker", "off"});
  REQUIRE_MESSAGE(failing.exit_code == 0, failing.err);
  callback.set_responder([](const RecordedRequest& request, size_t) {
    return CallbackAnswer(request.path == "/fail" ? 410 : 200);
  });
  RunResult joined = dqctl(*a, {"shard", "add", drained.address()});
  REQUIRE_MESSAGE(joined.exit_code == 0, joined.err);
  HttpClient http;
  http.add_header("Authorization: Bearer " + token);
  // Both hosts place on it once it joined.
  REQUIRE(add_once_known(http, b->jobs_url("later"), "warm") == 201);
  REQUIRE(wait_active(*a, drained.address()));
  REQUIRE(wait_active(*b, drained.address()));
  sleep_ms(1500);  // both hosts reloaded with it active
  std::vector<ShardAddress> all;
  for (const auto& name : {first.address(), second.address(), drained.address()}) {
    ShardAddress address;
    parse_host_port(name, &address.host, &address.port);
    all.push_back(address);
  }
  auto first_on_drained = [&](const std::string& topic, const std::string& id) {
    return shard_order(all, job_key(topic, id)).front() == 2;
  };
  // ~2,000 delayed jobs on the shard to drain, due in 20-40 s, and 20 dead letters.
  std::map<std::string, int64_t> due_at;  // id -> earliest allowed delivery (wall ms)
  for (int n = 0; due_at.size() < 2000; ++n) {
    std::string id = "later-" + std::to_string(n);
    if (!first_on_drained("later", id)) continue;
    double delay = 20 + (n % 21);
    int64_t sent = wall_ms();
    long status = http.post(a->jobs_url("later"), job_doc(id, Json{{"n", n}}, delay)).status;
    REQUIRE(status == 201);
    due_at[id] = sent + static_cast<int64_t>(delay * 1000);
  }
  int dying = 0;
  for (int n = 0; dying < 20; ++n) {
    std::string id = "dying-" + std::to_string(n);
    if (!first_on_drained("dying", id)) continue;
    REQUIRE(http.post(a->jobs_url("dying"), job_doc(id, Json{{"n", n}}, 0)).status == 201);
    ++dying;
  }
  REQUIRE(wait_until(kGenerousMs, [&] { return counted(drained, "dying:x") == 20; }));
  CHECK(counted(drained, "later:d") == 2000);
  std::vector<std::string> later_ids;
  for (const auto& [id, due] : due_at) later_ids.push_back(id);
  // A mover that died midway before the drain was seen by dqd: 30 jobs it
  // had only marked, 30 written on their target too, 30 also removed from
  // the source, and its lease (2 min) held by a pid of this host that is
  // gone. The checker started by the drain takes the lease over at once and
  // finishes each move.
  simulate_dead_mover(all, later_ids);

  Load load(*a, *b, token);
  sleep_ms(1000);
  RunResult drain = dqctl(*b, {"shard", "drain", drained.address()});
  REQUIRE_MESSAGE(drain.exit_code == 0, drain.err);
  int64_t drained_at = monotonic_ms();
  // Deletes and same-body adds of ids being moved, from both hosts, while the
  // move goes on: a delete is never undone by the move, an add finds the job
  // (wherever it is then) and adds no second one.
  int deletes_ok = 0, readds_ok = 0;
  std::set<std::string> deleted;
  std::thread meddler([&] {
    HttpClient client;
    client.add_header("Authorization: Bearer " + token);
    for (size_t i = 0; i < 300; ++i) {
      const std::string& id = later_ids[i * 6];
      const DqdProcess& host = i % 2 == 0 ? *a : *b;
      if (i % 3 == 0) {
        int n = std::stoi(id.substr(std::string("later-").size()));
        long status = client.post(host.jobs_url("later"), job_doc(id, Json{{"n", n}}, 1)).status;
        readds_ok += status == 200;  // the same id and body: the job found, nothing added
        continue;
      }
      long status = client.del(host.jobs_url("later") + "/" + id).status;
      deletes_ok += status == 204;
      if (status == 204) deleted.insert(id);
    }
  });
  // Once the move is under way, kill -9 every host's checker (the masters
  // start new ones): the move ends all the same, each job moved once.
  int64_t moved_then = 0;
  bool midway = wait_until(kGenerousMs, [&] {
    auto got = drained.command({"GET", "{dq}:moved_out"});
    moved_then = got->type == REDIS_REPLY_STRING ? std::stoll(got->str) : 0;
    return moved_then > 30;  // beyond the 30 the dead mover ended
  });
  CHECK(midway);
  int killed = 0;
  for (const auto* host : {a.get(), b.get()}) {
    for (pid_t pid : children_titled(host->pid(), "dq-redis-checker")) {
      killed += ::kill(pid, SIGKILL) == 0;
    }
  }
  MESSAGE("kill -9 of " << killed << " checker(s) after " << moved_then << " jobs were moved");
  CHECK(killed >= 1);
  RunResult progress = dqctl(*a, {"--json", "shard", "list"});
  REQUIRE_MESSAGE(progress.exit_code == 0, progress.err);
  MESSAGE("during the move: " << progress.out);

  meddler.join();
  MESSAGE("during the move: " << deletes_ok << " of 200 deletes answered 204, " << readds_ok
                              << " of 100 same-body adds answered 200 (existing)");
  CHECK(deletes_ok == 200);
  auto empty = [](TestRedis& redis) {
    for (const auto& [topic, jobs] : jobs_by_topic(redis)) {
      if (jobs > 0) return false;
    }
    return true;
  };
  // Well before the first job is due (20 s after it was added).
  CHECK(wait_until(60000, [&] { return empty(drained) && job_keys(drained) == 0; }));
  MESSAGE("the drained shard held no job " << monotonic_ms() - drained_at << " ms after the drain");
  // A job due within kMoveMarginMs of the mover's pass is delivered where it
  // is, never moved (a move could make it early). When the move outlasts the
  // first due times less that margin (a loaded machine), those jobs may stay.
  int64_t emptied_wall_ms = wall_ms();
  int64_t may_stay = 0;
  for (const auto& [id, due] : due_at) {
    may_stay += deleted.count(id) == 0 && due < emptied_wall_ms + kMoveMarginMs ? 1 : 0;
  }
  MESSAGE(may_stay << " job(s) were due within the move margin when the shard emptied");
  CHECK(job_keys(drained) == 0);
  CHECK(counted(first, "dying:x") + counted(second, "dying:x") == 20);
  RunResult listed = dqctl(*a, {"--json", "shard", "list"});
  Json list = Json::parse(listed.out, nullptr, false);
  REQUIRE(list.is_array());
  REQUIRE(list.size() == 3);
  // "drained" once it has been empty for the settle time (kDrainSettleMs),
  // which a slow move under load can already have passed.
  CHECK((list[2]["state"] == "draining" || list[2]["state"] == "drained"));
  CHECK(list[2]["jobs"] == 0);
  // Moved, not emptied by due time: every delayed job not deleted before its
  // move, and every dead letter.
  CHECK(list[2]["moved"].get<int64_t>() >= static_cast<int64_t>(2020 - deleted.size()) - may_stay);
  Admin admin(a->admin_url());
  REQUIRE(admin.login() == 200);
  HttpResult shown = admin.call("GET", "/api/shards");
  MESSAGE("admin shard list: " << shown.body);
  HttpResult removed = remove_when_settled(admin, drained.address());
  CHECK_MESSAGE(removed.status == 200, removed.body);

  load.stop();
  size_t expected = load.accepted().size() + 1 + due_at.size() - deleted.size();  // + warm
  REQUIRE(callback.wait_for(expected, 120000));
  // Every job delivered; the dead letters stay (moved, never delivered).
  auto delivered_all = [](TestRedis& redis) {
    for (const auto& [topic, jobs] : jobs_by_topic(redis)) {
      if (jobs > 0 && topic != "dying") return false;
    }
    return true;
  };
  CHECK(wait_until(kGenerousMs, [&] { return delivered_all(first) && delivered_all(second); }));
  sleep_ms(1000);  // a duplicate would show up now
  std::map<std::string, int> delivered;
  int early = 0;
  for (const auto& request : callback.requests()) {
    std::string id = request.header("x-dq-id");
    if (id.rfind("later-", 0) != 0) continue;
    ++delivered[id];
    early += request.arrived_ms < due_at[id];
  }
  int lost = 0, twice = 0, undeleted = 0;
  for (const auto& [id, due] : due_at) {
    if (deleted.count(id) != 0) {
      undeleted += delivered[id] != 0;
      continue;
    }
    lost += delivered[id] == 0;
    twice += delivered[id] > 1;
  }
  MESSAGE("moved jobs: " << due_at.size() << " added, " << deleted.size() << " deleted, "
                         << delivered.size() << " delivered, lost " << lost << ", twice " << twice
                         << ", early " << early << ", delivered after a 204 delete " << undeleted);
  CHECK(undeleted == 0);
  CHECK(lost == 0);
  CHECK(twice == 0);
  CHECK(early == 0);
  check_deliveries(callback, load);
}

// Jobs that wait for others (state waiting, docs/delivery.md "Dependencies
// between jobs") and the registrations that tell a job's shard who waits for
// it move with a shard change like every other job: a shard joins, then the
// first one (a config-file shard) drains. Pairs of every kind: the job that
// is waited for (A, due in 40 s) and its waiter (B) each homed on the new
// shard or not. Every B answers GET by id as waiting throughout, each shard
// holds exactly the waiters homed on it, the drained shard empties, and
// each B runs once, after its A.
TEST_CASE("waiting jobs and the waits on a job move with it when a shard joins and one drains") {
  TestRedis first;
  TestRedis joining;
  CallbackServer callback;
  auto host = start_host({first.address()});
  std::string token = producer_token(*host);
  RunResult topic = dqctl(*host, {"topic", "add", "t", "--callback", callback.url("/t")});
  REQUIRE_MESSAGE(topic.exit_code == 0, topic.err);
  HttpClient http;
  http.add_header("Authorization: Bearer " + token);
  REQUIRE(add_once_known(http, host->jobs_url("t"), "warm") == 201);

  std::vector<ShardAddress> both;
  for (const auto& name : {first.address(), joining.address()}) {
    ShardAddress address;
    parse_host_port(name, &address.host, &address.port);
    both.push_back(address);
  }
  auto homed_on_joining = [&](const std::string& id) {
    auto homes = id_homes(both, {ShardRole::kActive, ShardRole::kActive}, job_key("t", id));
    REQUIRE(homes);
    return homes->home == 1;
  };
  // Four pairs of each kind: (A moves, B moves) ... (neither moves at the join).
  struct Pair {
    std::string a, b;
  };
  std::vector<Pair> pairs;
  int64_t a_due_wall_ms = wall_ms() + 40000;
  int waiters_on_joining = 0;
  for (int kind = 0; kind < 4; ++kind) {
    bool a_moves = kind & 1, b_moves = kind & 2;
    int found = 0;
    for (int n = 0; found < 4; ++n) {
      std::string a = "a" + std::to_string(kind) + "-" + std::to_string(n);
      std::string b = "b" + std::to_string(kind) + "-" + std::to_string(n);
      if (homed_on_joining(a) != a_moves || homed_on_joining(b) != b_moves) continue;
      pairs.push_back({a, b});
      ++found;
      waiters_on_joining += b_moves;
    }
  }
  // And two waiters for jobs not added yet: registered on the only shard,
  // where the jobs' home is at first, carried to their home by the mover
  // (one at the join, one at the drain). The jobs are added after the drain.
  std::vector<Pair> late;
  for (int n = 0; late.size() < 2; ++n) {
    std::string a = "late-a" + std::to_string(n);
    if (homed_on_joining(a) != (late.size() == 0)) continue;
    std::string b = "late-b" + std::to_string(n);
    late.push_back({a, b});
    waiters_on_joining += homed_on_joining(b);
  }
  for (const Pair& pair : late) {
    Json waiter{{"id", pair.b},
                {"body", pair.b},
                {"after", Json::array({Json{{"topic", "t"}, {"id", pair.a}}})}};
    REQUIRE(http.post(host->jobs_url("t"), waiter.dump()).status == 201);
  }
  for (const Pair& pair : pairs) {
    REQUIRE(http.post(host->jobs_url("t"), job_doc(pair.a, pair.a, 40)).status == 201);
    Json waiter{{"id", pair.b},
                {"body", pair.b},
                {"after", Json::array({Json{{"topic", "t"}, {"id", pair.a}}})}};
    HttpResult added = http.post(host->jobs_url("t"), waiter.dump());
    REQUIRE_MESSAGE(added.status == 201, added.body);
  }
  const auto waiters = static_cast<int64_t>(pairs.size() + late.size());
  CHECK(counted(first, "t:b") == waiters);
  auto every_waiter_waits = [&] {
    std::vector<Pair> all = pairs;
    all.insert(all.end(), late.begin(), late.end());
    for (const Pair& pair : all) {
      HttpResult got = http.get(host->jobs_url("t") + "/" + pair.b);
      Json job = Json::parse(got.body, nullptr, false);
      if (got.status != 200 || !job.is_object() || job.value("state", "") != "waiting") {
        MESSAGE(pair.b << ": " << got.status << " " << got.body);
        return false;
      }
    }
    return true;
  };

  RunResult joined = dqctl(*host, {"shard", "add", joining.address()});
  REQUIRE_MESSAGE(joined.exit_code == 0, joined.err);
  REQUIRE(wait_active(*host, joining.address()));
  sleep_ms(1500);  // the host reloaded with it active
  CHECK(counted(joining, "t:b") == waiters_on_joining);
  CHECK(counted(first, "t:b") == waiters - waiters_on_joining);
  CHECK(every_waiter_waits());

  RunResult drain = dqctl(*host, {"shard", "drain", first.address()});
  REQUIRE_MESSAGE(drain.exit_code == 0, drain.err);
  bool emptied = wait_until(kGenerousMs, [&] {
    for (const auto& [name, jobs] : jobs_by_topic(first)) {
      if (jobs > 0) return false;
    }
    return true;
  });
  CHECK(emptied);
  CHECK(wall_ms() < a_due_wall_ms);  // moved, not delivered where it was
  CHECK(counted(joining, "t:b") == waiters);
  CHECK(every_waiter_waits());
  // Nothing is left waited for on the drained shard: it can be removed.
  CHECK(wait_until(kGenerousMs, [&] {
    return first.command({"SCARD", "{dq}:awaited"})->integer == 0;
  }));
  // Retried while refused (503, nothing written: while the drained shard is
  // still "leaving" in the host's view, the mover's fence refuses ids whose
  // home moves off it) or unknown (504: a retry with the same body finds the
  // job, 200).
  for (const Pair& pair : late) {
    std::map<long, int> refused;
    std::string last;
    CHECK(wait_until(kGenerousMs, [&] {
      HttpResult added = http.post(host->jobs_url("t"), job_doc(pair.a, pair.a, 0));
      if (added.status / 100 != 2) {
        ++refused[added.status];
        last = added.body;
      }
      return added.status == 201 || added.status == 200;
    }));
    for (const auto& [status, times] : refused) {
      MESSAGE("add of " << pair.a << ": " << times << " x " << status << ", last: " << last);
      CHECK((status == 503 || status == 504));
    }
  }
  pairs.insert(pairs.end(), late.begin(), late.end());

  // Each A runs at its due time on the shard it moved to, then its B.
  REQUIRE(callback.wait_for(1 + 2 * pairs.size(), 90000));
  sleep_ms(1500);  // a duplicate would show up now
  std::map<std::string, std::vector<int64_t>> calls;
  for (const auto& request : callback.requests()) {
    calls[request.header("x-dq-id")].push_back(request.arrived_ms);
  }
  int lost = 0, twice = 0, early = 0, out_of_order = 0;
  for (const Pair& pair : pairs) {
    lost += calls[pair.a].empty() + calls[pair.b].empty();
    twice += (calls[pair.a].size() > 1) + (calls[pair.b].size() > 1);
    if (calls[pair.a].empty() || calls[pair.b].empty()) continue;
    early += pair.a.rfind("late-", 0) != 0 && calls[pair.a][0] < a_due_wall_ms;
    out_of_order += calls[pair.b][0] < calls[pair.a][0];
  }
  MESSAGE(pairs.size() << " pairs: lost " << lost << ", twice " << twice << ", early " << early
                       << ", waiter before its job " << out_of_order);
  CHECK(lost == 0);
  CHECK(twice == 0);
  CHECK(early == 0);
  CHECK(out_of_order == 0);
}

// A job's ended record (its dedup window and history) lives on its home:
// forty jobs delivered on one shard, a second joins, and the ends of the
// ids whose home it becomes are carried there; a host that knows only the
// new layout answers GET of each from its home, and a retried add of each
// is its end, not a second job.
TEST_CASE(
    "a delivered job's end moves to its new home: GET and a retried add answer it after a join") {
  TestRedis first;
  TestRedis joining;
  CallbackServer callback;
  auto host = start_host({first.address()});
  HttpClient http;
  http.add_header("Authorization: Bearer " + producer_token(*host));
  // GET answers a gone job's end while its topic keeps history.
  RunResult topic = dqctl(*host, {"topic", "add", "done", "--callback", callback.url("/done"),
                                  "--keep-done-days", "1"});
  REQUIRE_MESSAGE(topic.exit_code == 0, topic.err);
  constexpr int kJobs = 40;
  auto id_of = [](int n) { return "ended-" + std::to_string(n); };
  REQUIRE(add_once_known(http, host->jobs_url("done"), id_of(0)) == 201);
  for (int n = 1; n < kJobs; ++n) {
    REQUIRE(http.post(host->jobs_url("done"), job_doc(id_of(n), Json{{"n", 0}}, 0)).status == 201);
  }
  REQUIRE(wait_until(kGenerousMs, [&] { return callback.count() >= kJobs; }));
  // Every job ended on the one shard, which remembers each end.
  REQUIRE(wait_until(kGenerousMs, [&] {
    return first.command({"EVAL", "return #redis.call('KEYS', ARGV[1])", "0", "{dq}:ended:*"})
               ->integer == kJobs;
  }));
  std::vector<ShardAddress> both;
  for (const auto& name : {first.address(), joining.address()}) {
    ShardAddress address;
    parse_host_port(name, &address.host, &address.port);
    both.push_back(address);
  }
  std::set<std::string> moving;  // ids whose home the joining shard becomes
  for (int n = 0; n < kJobs; ++n) {
    auto homes =
        id_homes(both, {ShardRole::kActive, ShardRole::kActive}, job_key("done", id_of(n)));
    REQUIRE(homes);
    if (homes->home == 1) moving.insert(id_of(n));
  }
  MESSAGE(moving.size() << " of " << kJobs << " ids have their home on the joining shard");
  REQUIRE(!moving.empty());

  RunResult joined = dqctl(*host, {"shard", "add", joining.address()});
  REQUIRE_MESSAGE(joined.exit_code == 0, joined.err);
  REQUIRE(wait_active(*host, joining.address()));
  // A host started now reads the shard as active: it asks each id's home
  // alone (one still running may ask the previous home a moment longer).
  REQUIRE(host->stop() == 0);
  host->start();
  REQUIRE(wait_until(kGenerousMs,
                     [&] { return http.get(host->base_url() + "/v1/topics/done").status == 200; }));
  int answered = 0, retried_same = 0, on_home = 0, left_behind = 0;
  for (int n = 0; n < kJobs; ++n) {
    std::string id = id_of(n);
    TestRedis& home = moving.count(id) ? joining : first;
    TestRedis& other = moving.count(id) ? first : joining;
    on_home += home.command({"EXISTS", keys::ended(job_key("done", id))})->integer == 1;
    left_behind += other.command({"EXISTS", keys::ended(job_key("done", id))})->integer == 1;
    // GET answers the job's end from its home.
    answered += wait_until(kGenerousMs, [&] {
      HttpResult shown = http.get(host->jobs_url("done") + "/" + id);
      return shown.status == 200 && shown.json().value("state", "") == "done";
    });
    // A retried add of the same job (its answer lost) is its end, not a new job.
    HttpResult again = http.post(host->jobs_url("done"), job_doc(id, Json{{"n", 0}}, 0));
    retried_same += again.status == 200 && again.json().value("state", "") == "delivered";
  }
  MESSAGE("ends on their home " << on_home << ", left on the other shard " << left_behind
                                << ", GET answered " << answered << ", retried adds answered "
                                << retried_same << " of " << kJobs);
  CHECK(on_home == kJobs);
  CHECK(left_behind == 0);
  CHECK(answered == kJobs);
  CHECK(retried_same == kJobs);
  sleep_ms(2000);  // a retried add that made a new job would be delivered by now
  CHECK(callback.count() == kJobs);
}

// A schedule's next tick lives on its home shard, with its ticks' jobs.
// Six schedules of "@every 1s" (one per topic) tick on one shard; a second
// joins, and the schedules whose home it becomes go on there: each next-tick
// key ends on its home (any copy left elsewhere older, never used), and every
// tick from the first to the last is delivered once, none missing across
// the change.
TEST_CASE("schedules go on across a shard join: each next tick on its home, every tick once") {
  TestRedis first;
  TestRedis joining;
  CallbackServer callback;
  auto host = start_host({first.address()});
  std::map<std::string, std::string> schedule_of;  // topic -> schedule id
  for (int n = 0; n < 6; ++n) {
    std::string topic = "s" + std::to_string(n);
    RunResult added =
        dqctl(*host, {"topic", "add", topic, "--callback", callback.url("/" + topic)});
    REQUIRE_MESSAGE(added.exit_code == 0, added.err);
    RunResult scheduled = dqctl(*host, {"schedule", "add", topic, "@every 1s"});
    REQUIRE_MESSAGE(scheduled.exit_code == 0, scheduled.err);
    RunResult listed = dqctl(*host, {"--json", "schedule", "list", topic});
    Json list = Json::parse(listed.out, nullptr, false);
    REQUIRE(list.is_object());
    REQUIRE(list["schedules"].size() == 1);
    schedule_of[topic] = list["schedules"][0]["id"].get<std::string>();
  }
  std::vector<ShardAddress> both;
  for (const auto& name : {first.address(), joining.address()}) {
    ShardAddress address;
    parse_host_port(name, &address.host, &address.port);
    both.push_back(address);
  }
  int moving = 0;
  std::map<std::string, size_t> home_of;
  for (const auto& [topic, id] : schedule_of) {
    auto homes =
        id_homes(both, {ShardRole::kActive, ShardRole::kActive}, schedule_home_key(topic, id));
    REQUIRE(homes);
    home_of[topic] = homes->home;
    moving += homes->home == 1;
  }
  MESSAGE(moving << " of 6 schedules have their home on the joining shard");
  REQUIRE(wait_until(kGenerousMs, [&] { return callback.count() >= 18; }));  // ticking

  RunResult joined = dqctl(*host, {"shard", "add", joining.address()});
  REQUIRE_MESSAGE(joined.exit_code == 0, joined.err);
  REQUIRE(wait_active(*host, joining.address()));
  sleep_ms(4000);  // ticks on the new layout
  // Each schedule's state is on its home. A key can be left on the other
  // shard when a timer of a host that had not reloaded started the schedule
  // there after the change ended (its fence cleared): it is then older than
  // the home's, and never used (a later carry or a timer keeps the later).
  int stale = 0;
  for (const auto& [topic, id] : schedule_of) {
    TestRedis& home = home_of[topic] == 1 ? joining : first;
    TestRedis& other = home_of[topic] == 1 ? first : joining;
    std::string key = keys::schedule_next(id);
    auto at_home = home.command({"GET", key});
    REQUIRE_MESSAGE(at_home->type == REDIS_REPLY_STRING, topic << " not on its home");
    auto elsewhere = other.command({"GET", key});
    if (elsewhere->type != REDIS_REPLY_STRING) continue;
    ++stale;
    CHECK_MESSAGE(std::stoll(elsewhere->str) <= std::stoll(at_home->str),
                  topic << " left behind with a later next tick than its home's");
  }
  MESSAGE(stale << " stale next-tick key(s) on the other shard");
  for (const auto& [topic, id] : schedule_of) {
    RunResult paused = dqctl(*host, {"schedule", "pause", topic, "@every 1s"});
    REQUIRE_MESSAGE(paused.exit_code == 0, paused.err);
  }
  sleep_ms(3000);  // the last ticks added before the pause are delivered
  std::map<std::string, std::map<std::string, int>> ticks;  // topic -> tick text -> deliveries
  for (const auto& request : callback.requests()) {
    std::string id = request.header("x-dq-id");
    size_t at = id.find(':', std::string("schedule:").size());
    REQUIRE(at != std::string::npos);
    ++ticks[request.path.substr(1)][id.substr(at + 1)];
  }
  int twice = 0, missing = 0;
  for (const auto& [topic, by_tick] : ticks) {
    std::vector<int64_t> instants;
    for (const auto& [text, count] : by_tick) {
      twice += count > 1;
      auto parsed = parse_time_text(text);
      REQUIRE(parsed.is_ok());
      instants.push_back(parsed->ms);
    }
    std::sort(instants.begin(), instants.end());
    missing += static_cast<int>((instants.back() - instants.front()) / 1000 + 1) -
               static_cast<int>(instants.size());
  }
  MESSAGE("ticks over 6 schedules: " << callback.count() << " delivered, twice " << twice
                                     << ", missing " << missing);
  CHECK(ticks.size() == 6);
  CHECK(twice == 0);
  CHECK(missing == 0);
}

}  // namespace
}  // namespace dq::test

namespace dq::test {
namespace {

// The load of the move's test and kill -9 of every checker, with no drain:
// a checker's death (a process that delivers nothing) makes no job
// delivered twice, lost or early.
TEST_CASE("kill -9 of every checker under an add load delivers each job once") {
  TestRedis first;
  TestRedis second;
  TestRedis third;
  CallbackServer callback;
  std::vector<std::string> shards = {first.address(), second.address()};
  auto a = start_host(shards);
  auto b = start_host(shards);
  std::string token = add_load_topics(*a, callback);
  RunResult joined = dqctl(*a, {"shard", "add", third.address()});
  REQUIRE_MESSAGE(joined.exit_code == 0, joined.err);
  HttpClient http;
  http.add_header("Authorization: Bearer " + token);
  REQUIRE(add_once_known(http, b->jobs_url("later"), "warm") == 201);
  sleep_ms(4500);
  Load load(*a, *b, token);
  sleep_ms(3000);
  int killed = 0;
  for (const auto* host : {a.get(), b.get()}) {
    for (pid_t pid : children_titled(host->pid(), "dq-redis-checker")) {
      killed += ::kill(pid, SIGKILL) == 0;
    }
  }
  CHECK(killed >= 2);
  sleep_ms(8000);
  load.stop();
  auto empty = [](TestRedis& redis) {
    for (const auto& [topic, jobs] : jobs_by_topic(redis)) {
      if (jobs > 0) return false;
    }
    return true;
  };
  REQUIRE(callback.wait_for(load.accepted().size() + 1, 60000));
  CHECK(wait_until(kGenerousMs, [&] { return empty(first) && empty(second) && empty(third); }));
  sleep_ms(1000);
  check_deliveries(callback, load);
}

}  // namespace
}  // namespace dq::test

namespace dq::test {
namespace {

// Any shard can be drained: one of the config file's, under load. Its jobs
// move to their homes, it ends with none, and it stays drained (asked by
// no one, given nothing) while the file lists it; once out of the file it
// is removed.
TEST_CASE(
    "a config-file shard drained under load ends with 0 jobs and stays drained until it is "
    "removed from the file") {
  TestRedis first;
  TestRedis second;
  CallbackServer callback;
  std::vector<std::string> shards = {first.address(), second.address()};
  auto a = start_host(shards);
  std::string token = add_load_topics(*a, callback);
  HttpClient http;
  http.add_header("Authorization: Bearer " + token);
  REQUIRE(add_once_known(http, a->jobs_url("later"), "warm") == 201);
  std::vector<ShardAddress> all;
  for (const auto& name : shards) {
    ShardAddress address;
    parse_host_port(name, &address.host, &address.port);
    all.push_back(address);
  }
  // 500 jobs due in 25-40 s on the shard to drain.
  std::map<std::string, int64_t> due_at;
  for (int n = 0; due_at.size() < 500; ++n) {
    std::string id = "later-" + std::to_string(n);
    if (shard_order(all, job_key("later", id)).front() != 1) continue;
    double delay = 25 + (n % 16);
    int64_t sent = wall_ms();
    REQUIRE(http.post(a->jobs_url("later"), job_doc(id, Json{{"n", n}}, delay)).status == 201);
    due_at[id] = sent + static_cast<int64_t>(delay * 1000);
  }
  CHECK(counted(second, "later:d") == 500);
  Load load(*a, *a, token);
  sleep_ms(1000);
  RunResult drain = dqctl(*a, {"--json", "shard", "drain", second.address()});
  REQUIRE_MESSAGE(drain.exit_code == 0, drain.err);
  int64_t drained_at = monotonic_ms();
  // The checker moves its jobs and, once it holds none (and drained 10 s),
  // makes it drained.
  auto state = [&] {
    RunResult shown = dqctl(*a, {"--json", "shard", "list"});
    Json list = Json::parse(shown.out, nullptr, false);
    for (const auto& shard : list.is_array() ? list : Json::array()) {
      if (shard.value("name", "") == second.address()) return shard;
    }
    return Json();
  };
  CHECK(wait_until(60000, [&] { return state().value("state", "") == "drained"; }));
  Json shown = state();
  MESSAGE("the config-file shard was drained " << monotonic_ms() - drained_at << " ms after the "
                                               << "drain: " << shown.dump());
  CHECK(shown["source"] == "config");
  CHECK(shown["jobs"] == 0);
  CHECK(shown["moved"].get<int64_t>() >= 500);
  for (const auto& [topic, jobs] : jobs_by_topic(second)) {
    CAPTURE(topic);
    CHECK(jobs == 0);
  }
  // It stays drained: the load's new jobs all go to the first shard.
  sleep_ms(1500);
  for (const auto& [topic, jobs] : jobs_by_topic(second)) {
    CAPTURE(topic);
    CHECK(jobs == 0);
  }
  // Not removed while the file lists it.
  RunResult refused = dqctl(*a, {"--json", "shard", "remove", second.address()});
  CHECK(refused.exit_code == 1);
  CHECK(Json::parse(refused.out, nullptr, false).value("error", "").find("config file") !=
        std::string::npos);
  load.stop();
  // Out of the file (the master reloads on its own), then removed.
  a->rewrite_config(host_options({first.address()}));
  bool removed = wait_until(kGenerousMs, [&] {
    return dqctl(*a, {"shard", "remove", second.address()}).exit_code == 0;
  });
  CHECK(removed);
  RunResult after = dqctl(*a, {"--json", "shard", "list"});
  CHECK(Json::parse(after.out, nullptr, false).size() == 1);

  size_t expected = load.accepted().size() + 1 + due_at.size();  // + warm
  REQUIRE(callback.wait_for(expected, 120000));
  sleep_ms(1000);  // a duplicate would show up now
  std::map<std::string, int> delivered;
  int early = 0;
  for (const auto& request : callback.requests()) {
    std::string id = request.header("x-dq-id");
    if (due_at.count(id) == 0) continue;
    ++delivered[id];
    early += request.arrived_ms < due_at[id];
  }
  int lost = 0, twice = 0;
  for (const auto& [id, due] : due_at) {
    lost += delivered[id] == 0;
    twice += delivered[id] > 1;
  }
  MESSAGE("jobs on the drained config-file shard: " << due_at.size() << ", lost " << lost
                                                    << ", twice " << twice << ", early " << early);
  CHECK(lost == 0);
  CHECK(twice == 0);
  CHECK(early == 0);
  check_deliveries(callback, load);
}

}  // namespace
}  // namespace dq::test
