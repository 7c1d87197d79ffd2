// Schedules (docs/schedules.md): the step a timer plans (plan_tick), the
// script that adds a tick's job and moves the next tick on
// (schedule_tick.lua) against a real redis-server, the HTTP routes and dqctl
// against a real dqd, and the promises with real processes: `@every 1s`
// across two dqd hosts on one Redis adds each tick once; a restart after
// 10 s down runs the latest missed tick once with catch-up one and never
// with none; ticks across the 2026 changes of Europe/Paris agree with
// croniter's reading of the fields on zoneinfo's clock.
#include <doctest/doctest.h>

#include <fstream>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "common/core/clock.h"
#include "common/core/cron_spec.h"
#include "common/core/time_text.h"
#include "common/redis/redis_sync.h"
#include "common/registry/topic_schedules.h"
#include "common/store/keys.h"
#include "common/store/placement.h"
#include "common/store/reply_values.h"
#include "common/store/schedule_ticks.h"
#include "tests/support/admin_client.h"
#include "tests/support/e2e.h"
#include "tests/support/http_client.h"
#include "tests/support/redis_server.h"
#include "tests/support/run_program.h"
#include "tests/support/time_oracle.h"

namespace dq::test {
namespace {

constexpr int kGenerousMs = 60000;

CronSpec spec_of(const std::string& text, const std::string& zone = "UTC") {
  auto tz = TimeZone::find(zone);
  REQUIRE(tz.is_ok());
  auto spec = CronSpec::parse(text, *tz);
  REQUIRE_MESSAGE(spec.is_ok(), spec.status().message());
  return *spec;
}

int64_t utc_ms(const std::string& text) {
  auto parsed = parse_time_text(text);
  REQUIRE(parsed.is_ok());
  return parsed->ms;
}

RunResult dqctl(const DqdProcess& host, std::vector<std::string> args) {
  args.insert(args.begin(), {"-c", host.config_path()});
  return run_dqctl(args, host.dir());
}

// A topic made as an operator makes it (a versioned write, shared with
// every host), so the schedule writes that follow edit a known version.
void add_topic(const DqdProcess& host, const std::string& name, const std::string& url) {
  RunResult added = dqctl(host, {"topic", "add", name, "--callback", url});
  REQUIRE_MESSAGE(added.exit_code == 0, added.err);
}

std::string schedules_url(const DqdProcess& host, const std::string& topic) {
  return host.base_url() + "/v1/topics/" + topic + "/schedules";
}

// The tick instant (ms) of a tick job's id "schedule:<id>:<UTC>"; -1 otherwise.
int64_t tick_of(const std::string& id) {
  if (id.rfind("schedule:", 0) != 0) {
    return -1;
  }
  size_t after_id = id.find(':', 9);  // the tick itself holds colons
  if (after_id == std::string::npos) {
    return -1;
  }
  auto parsed = parse_time_text(id.substr(after_id + 1));
  return parsed.is_ok() ? parsed->ms : -1;
}

// The sum of a counter of /metrics for one topic.
double metric(const DqdProcess& host, const std::string& name, const std::string& topic) {
  HttpClient http;
  std::string text = http.get(host.base_url() + "/metrics").body;
  std::string prefix = name + "{topic=\"" + topic + "\"} ";
  size_t at = text.find(prefix);
  return at == std::string::npos ? -1 : std::stod(text.substr(at + prefix.size()));
}

}  // namespace

TEST_CASE("plan_tick: on time adds the tick; missed ones follow catch-up one or none") {
  CronSpec every = spec_of("@every 10s");
  int64_t t = utc_ms("2026-03-30T00:00:00Z");
  // On time (within the slack): this tick, and the next is the one after it.
  using Ticks = std::vector<int64_t>;
  TickPlan on_time = plan_tick(every, true, t, t + 1500);
  CHECK(on_time.job_ticks == Ticks{t});
  CHECK(on_time.next_ms == t + 10000);
  CHECK(on_time.skipped == 0);
  // 65 s late: ticks t .. t+60 s (7) were missed, t+70 s is next.
  TickPlan one = plan_tick(every, true, t, t + 65000);
  CHECK(one.job_ticks == Ticks{t + 60000});
  CHECK(one.skipped == 6);
  CHECK(one.next_ms == t + 70000);
  TickPlan none = plan_tick(every, false, t, t + 65000);
  CHECK(none.job_ticks.empty());
  CHECK(none.skipped == 7);
  CHECK(none.next_ms == t + 70000);
  // A tick within the slack of now is on time: added with the catch-up.
  TickPlan edge = plan_tick(every, true, t, t + 71000);
  CHECK(edge.job_ticks == Ticks{t + 60000, t + 70000});
  CHECK(edge.skipped == 6);
  CHECK(edge.next_ms == t + 80000);
  CHECK(plan_tick(every, false, t, t + 71000).job_ticks == Ticks{t + 70000});
  // A calendar spec walks its ticks: "*/15" two hours late.
  CronSpec quarter = spec_of("*/15 * * * *");
  TickPlan late = plan_tick(quarter, true, t, t + 2 * 3600000 + 60000);
  CHECK(late.job_ticks == Ticks{t + 2 * 3600000});
  CHECK(late.skipped == 8);
  CHECK(late.next_ms == t + 2 * 3600000 + 15 * 60000);
  // A year of minutes missed (more than are counted): the latest is found.
  CronSpec minutes = spec_of("* * * * *");
  int64_t year_on = t + int64_t{366} * 86400000;
  TickPlan year = plan_tick(minutes, true, t, year_on + 30000);
  CHECK(year.job_ticks == Ticks{year_on});
  CHECK(year.next_ms == year_on + 60000);
  CHECK(year.skipped == 99999);

  CHECK(tick_job_id("sch_0123456789abcdef", t) ==
        "schedule:sch_0123456789abcdef:2026-03-30T00:00:00Z");
  CHECK(tick_of(tick_job_id("sch_0123456789abcdef", t)) == t);
  // Every tick of a schedule is placed by the schedule.
  CHECK(placement_key("t:schedule:sch_1:2026-03-30T00:00:00Z") == "t:schedule:sch_1");
  CHECK(placement_key("t:plain") == "t:plain");
  CHECK(placement_key("t:schedule:") == "t:schedule:");
  std::vector<ShardAddress> shards;
  for (int port : {7001, 7002, 7003, 7004, 7005}) {
    shards.emplace_back("127.0.0.1", port);
  }
  std::vector<ShardRole> roles(shards.size(), ShardRole::kActive);
  size_t home = id_homes(shards, roles, schedule_home_key("t", "sch_1"))->home;
  for (int hour = 0; hour < 24; ++hour) {
    std::string id = tick_job_id("sch_1", t + hour * 3600000);
    CHECK(id_homes(shards, roles, job_key("t", id))->home == home);
  }
}

TEST_CASE("ticks across the 2026 changes of Europe/Paris: the rule, checked against croniter") {
  // A timer stepping each schedule at each tick (plan_tick, as dq-timer
  // does) adds the ticks the brute-force reading of the rule finds:
  // croniter's reading of the fields at each wall minute, at zoneinfo's
  // fold=0 instant (tests/support/time_oracle.py). No tick twice, none lost.
  const std::vector<std::string> specs = {"30 2 * * *",    "*/15 * * * *", "0 * * * *",
                                          "15,45 2 * * *", "0 3 * * *",    "59 1 * * *"};
  const std::vector<std::string> days = {"2026-03-28T12:00:00Z", "2026-10-24T12:00:00Z"};
  Json request{{"crons", Json::array()}};
  for (const std::string& day : days) {
    for (const std::string& spec : specs) {
      request["crons"].push_back({{"spec", spec},
                                  {"zone", "Europe/Paris"},
                                  {"after", utc_ms(day) / 1000},
                                  {"count", 8},
                                  {"horizon_minutes", 12 * 24 * 60}});
    }
  }
  Json answer = ask_time_oracle(request);
  REQUIRE(answer["crons"].size() == days.size() * specs.size());
  int agreed_with_croniter = 0;
  size_t index = 0;
  for (const std::string& day : days) {
    for (const std::string& text : specs) {
      INFO(text << " from " << day);
      CronSpec spec = spec_of(text, "Europe/Paris");
      // Started at `day`, stepped at each tick's instant.
      int64_t stored = first_tick(spec, utc_ms(day));
      std::vector<int64_t> added;
      std::set<std::string> ids;
      while (added.size() < 8) {
        TickPlan plan = plan_tick(spec, true, stored, stored);
        REQUIRE(plan.job_ticks.size() == 1);
        CHECK(plan.skipped == 0);
        added.push_back(plan.job_ticks[0]);
        CHECK(ids.insert(tick_job_id("sch_x", plan.job_ticks[0])).second);
        stored = plan.next_ms;
      }
      std::vector<int64_t> rule, croniter;
      for (const Json& s : answer["crons"][index]["rule"]) {
        rule.push_back(s.get<int64_t>() * 1000);
      }
      for (const Json& s : answer["crons"][index]["croniter"]) {
        croniter.push_back(s.get<int64_t>() * 1000);
      }
      ++index;
      CHECK(added == rule);
      agreed_with_croniter += added == croniter ? 1 : 0;
    }
  }
  // Where croniter 1.3.5 itself differs, it contradicts its own fields
  // (tests/test_cron_spec.cc tells each case apart).
  MESSAGE(agreed_with_croniter << " of " << index
                               << " sequences equal croniter's own next runs too");
}

TEST_CASE("schedule_tick.lua: a tick adds its job once; a stale caller changes nothing") {
  TestRedis redis;
  RedisConnection connection(redis.shard(), 1000, 2000);
  const std::string sid = "sch_00000000000000aa";
  auto read = [&] {
    auto reply = connection.run(schedule_read_call(sid));
    REQUIRE(reply.is_ok());
    ScheduleRead out;
    int64_t next = 0;
    if (reply_int((*reply)->element[0], &next)) {
      out.next_ms = next;
    }
    REQUIRE(reply_int((*reply)->element[1], &out.now_ms));
    return out;
  };
  auto verdict = [&](const ScriptCall& call) {
    auto reply = connection.run(call);
    REQUIRE_MESSAGE(reply.is_ok(), reply.status().message());
    return reply_string((*reply)->element[0]) + " " + reply_string((*reply)->element[1]);
  };
  ScheduleRead fresh = read();
  CHECK_FALSE(fresh.next_ms);
  // Started: the next tick is stored; a second start is stale.
  int64_t tick = fresh.now_ms - 5000;  // as if stored a while ago: due
  int64_t later = fresh.now_ms + 60000;
  CHECK(verdict(schedule_tick_call("t", sid, std::nullopt, tick, 0, {}, "")) ==
        "started " + std::to_string(tick));
  CHECK(verdict(schedule_tick_call("t", sid, std::nullopt, tick + 1, 0, {}, "")) ==
        "stale " + std::to_string(tick));
  TickJob job{"t", tick_job_id(sid, tick), tick_body(R"({"at":"{{tick}}"})", tick), tick};
  // Two timers read the same T: the first adds the job, the second is stale.
  std::string first = verdict(schedule_tick_call("t", sid, tick, later, 0, {job}, ""));
  CHECK(first.rfind("ticked added|", 0) == 0);
  CHECK(verdict(schedule_tick_call("t", sid, tick, later, 0, {job}, "")) ==
        "stale " + std::to_string(later));
  CHECK(read().next_ms == later);
  // The job is a normal job, named by the tick, with the body filled in.
  std::string key = job_key("t", job.id);
  auto record = redis.command({"HGET", keys::records_of(key), key});
  REQUIRE(record->type == REDIS_REPLY_STRING);
  CHECK(std::string(record->str).find(R"({"at":")" + format_utc_instant(tick) + "\"}") !=
        std::string::npos);
  // A tick not yet due by Redis's clock changes nothing.
  TickJob early{"t", tick_job_id(sid, later), "{}", later};
  CHECK(verdict(schedule_tick_call("t", sid, later, later + 1000, 0, {early}, "")) ==
        "early " + std::to_string(later));
  std::string early_key = job_key("t", early.id);
  CHECK(redis.command({"HEXISTS", keys::records_of(early_key), early_key})->integer == 0);
  CHECK(read().next_ms == later);
  // Counted: one tick added.
  auto totals = redis.command({"HGET", keys::totals(), "t:tick_added"});
  REQUIRE(totals->type == REDIS_REPLY_STRING);
  CHECK(std::string(totals->str) == "1");
}

TEST_CASE("schedules over HTTP and dqctl: add, list with next runs, pause, del; bad input is 400") {
  TestRedis redis;
  DqdOptions options = one_timer_one_consumer({redis.address()});
  options.consumers = 0;  // the ticks' jobs stay to be looked at
  options.admin = true;
  options.extra_ini = "[admin]\nuser = admin\npassword_file = admin-password\n";
  DqdProcess dqd(options);
  std::ofstream(dqd.dir() + "/admin-password") << "correct horse battery\n";
  CallbackServer callback;
  dqd.start();
  add_topic(dqd, "reports", callback.url());
  HttpClient http;
  std::string url = schedules_url(dqd, "reports");

  HttpResult added = http.post(url, R"({"spec": "30 2 * * *", "tz": "Europe/Paris",
                                        "body": {"kind": "nightly", "tick": "{{tick}}"},
                                        "catch_up": "none"})");
  REQUIRE_MESSAGE(added.status == 201, added.body);
  Json schedule = added.json();
  CHECK(schedule["spec"] == "30 2 * * *");
  CHECK(schedule["zone"] == "Europe/Paris");
  CHECK(schedule["catch_up"] == "none");
  CHECK(schedule["paused"] == false);
  CHECK(schedule["body"]["kind"] == "nightly");
  CHECK(schedule["id"].get<std::string>().rfind("sch_", 0) == 0);
  REQUIRE(schedule["next_runs"].size() == 5);
  // The next five agree with CronSpec's own (tested against croniter).
  CronSpec nightly = spec_of("30 2 * * *", "Europe/Paris");
  int64_t first = utc_ms(schedule["next_runs"][0].get<std::string>());
  std::vector<int64_t> expected = nightly.next_runs(first - 1, 5);
  for (size_t i = 0; i < 5; ++i) {
    CHECK(utc_ms(schedule["next_runs"][i].get<std::string>()) == expected[i]);
  }

  // The admin page lists it with the same next runs.
  AdminClient admin(dqd.admin_url());
  REQUIRE(admin.login("admin", "correct horse battery").status == 200);
  AdminAnswer on_page = admin.call("GET", "/api/topics/reports/schedules");
  REQUIRE(on_page.status == 200);
  REQUIRE(on_page.json()["schedules"].size() == 1);
  CHECK(on_page.json()["schedules"][0]["next_runs"] == schedule["next_runs"]);
  CHECK(admin.call("GET", "/api/topics/ghost/schedules").status == 404);

  // Bad input: 400 with a message, nothing written.
  const std::vector<std::pair<std::string, std::string>> bad = {
      {R"({"spec": "61 * * * *"})", "spec"},
      {R"({"spec": "* * * *"})", "spec"},
      {R"({"spec": "@every 0s"})", "spec"},
      {R"({"spec": "* * * * *", "tz": "Mars/Olympus"})", "tz"},
      {R"({"spec": "* * * * *", "catch_up": "all"})", "catch_up"},
      {R"({"spec": "* * * * *", "body": "not json"})", "body"},
      {R"({"spec": "* * * * *", "body": 5})", "body"},
      {R"({"spec": "* * * * *", "paused": "yes"})", "paused"},
      {R"({"spec": "* * * * *", "color": "red"})", "color"},
      {R"({"tz": "UTC"})", "spec"},
      {R"([1])", "JSON object"},
      {"{", "JSON object"},
  };
  for (const auto& [body, word] : bad) {
    INFO(body);
    HttpResult refused = http.post(url, body);
    CHECK(refused.status == 400);
    CHECK(refused.json()["error"].get<std::string>().find(word) != std::string::npos);
  }
  CHECK(http.post(url, R"({"spec": "30 2 * * *"})").status == 409);  // the same spec twice
  CHECK(http.post(schedules_url(dqd, "ghost"), R"({"spec": "@hourly"})").status == 404);
  CHECK(http.get(schedules_url(dqd, "ghost")).status == 404);
  HttpResult listed = http.get(url);
  REQUIRE(listed.status == 200);
  REQUIRE(listed.json()["schedules"].size() == 1);
  CHECK(listed.json()["schedules"][0]["id"] == schedule["id"]);

  // Pause and resume: PATCH {spec, paused}; a paused schedule lists no runs.
  HttpResult paused = http.request("PATCH", url, R"({"spec": "30 2 * * *", "paused": true})");
  REQUIRE_MESSAGE(paused.status == 200, paused.body);
  CHECK(paused.json()["paused"] == true);
  CHECK(paused.json()["next_runs"].empty());
  CHECK(http.request("PATCH", url, R"({"spec": "0 0 * * *", "paused": true})").status == 404);
  CHECK(http.request("PATCH", url, R"({"spec": "30 2 * * *"})").status == 400);
  CHECK(http.request("PATCH", url, R"({"spec": "30 2 * * *", "paused": 1})").status == 400);

  // dqctl sees the same, and writes the same way.
  RunResult shown = dqctl(dqd, {"--json", "schedule", "list", "reports"});
  REQUIRE_MESSAGE(shown.exit_code == 0, shown.err);
  Json from_ctl = Json::parse(shown.out);
  REQUIRE(from_ctl["schedules"].size() == 1);
  CHECK(from_ctl["schedules"][0]["paused"] == true);
  RunResult resumed = dqctl(dqd, {"schedule", "resume", "reports", "30 2 * * *"});
  REQUIRE_MESSAGE(resumed.exit_code == 0, resumed.err);
  RunResult every = dqctl(dqd, {"schedule", "add", "reports", "@every 1s", "--body",
                                R"({"ms": {{tick_ms}}})", "--catch-up", "one"});
  REQUIRE_MESSAGE(every.exit_code == 0, every.err);
  RunResult wrong = dqctl(dqd, {"schedule", "add", "reports", "@every 2s", "--catch-up", "both"});
  CHECK(wrong.exit_code == 1);
  CHECK(wrong.err.find("catch_up") != std::string::npos);
  CHECK(dqctl(dqd, {"schedule", "add", "reports"}).exit_code == 2);
  RunResult table = dqctl(dqd, {"schedule", "list", "reports"});
  CHECK(table.out.find("@every 1s") != std::string::npos);
  CHECK(table.out.find("active") != std::string::npos);

  // The timer adds @every 1s's ticks: jobs named by their tick, the body filled in.
  std::string jobs_url = dqd.jobs_url("reports") + "?state=ready&limit=500";
  Json jobs;
  REQUIRE(wait_within(kGenerousMs, [&] {
    jobs = http.get(jobs_url).json()["jobs"];
    return jobs.size() >= 2;
  }));
  for (const Json& listed : jobs) {
    std::string id = listed["id"].get<std::string>();
    int64_t tick = tick_of(id);
    CHECK(tick > 0);
    HttpResult job = http.get(dqd.jobs_url("reports") + "/" + id);
    REQUIRE(job.status == 200);
    CHECK(job.json()["body"]["ms"].get<int64_t>() == tick);
  }
  CHECK(metric(dqd, "dq_schedule_ticks_added_total", "reports") >= 2);

  // Delete: by ?spec=; then gone from the list, and no more ticks.
  CHECK(http.del(url).status == 400);
  CHECK(http.del(url + "?spec=%40every%202s").status == 404);
  HttpResult deleted = http.del(url + "?spec=%40every%201s");
  REQUIRE_MESSAGE(deleted.status == 200, deleted.body);
  CHECK(deleted.json()["deleted"] == "@every 1s");
  RunResult del_ctl = dqctl(dqd, {"schedule", "del", "reports", "30 2 * * *"});
  REQUIRE_MESSAGE(del_ctl.exit_code == 0, del_ctl.err);
  // The server reads the registry dqctl wrote on its next refresh.
  CHECK(wait_within(kGenerousMs, [&] { return http.get(url).json()["schedules"].empty(); }));
}

TEST_CASE("@every 1s on two dqd hosts on one Redis adds each tick once over 30 s") {
  TestRedis redis;
  CallbackServer callback;
  DqdOptions options;
  options.shards = {redis.address()};
  options.timers = 2;  // two timers per host: four in all race for each tick
  options.consumers = 1;
  DqdProcess a(options);
  DqdProcess b(options);
  a.start();
  b.start();
  RunResult topic = dqctl(a, {"topic", "add", "beat", "--callback", callback.url()});
  REQUIRE_MESSAGE(topic.exit_code == 0, topic.err);
  RunResult added = dqctl(a, {"schedule", "add", "beat", "@every 1s"});
  REQUIRE_MESSAGE(added.exit_code == 0, added.err);
  // B runs it too once its registry copy has it.
  REQUIRE(wait_within(kGenerousMs, [&] {
    RunResult on_b = dqctl(b, {"--json", "schedule", "list", "beat"});
    return on_b.exit_code == 0 && Json::parse(on_b.out)["schedules"].size() == 1;
  }));
  // 30 s of ticks, then paused; every tick added is delivered.
  sleep_ms(30000);
  RunResult paused = dqctl(b, {"schedule", "pause", "beat", "@every 1s"});
  REQUIRE_MESSAGE(paused.exit_code == 0, paused.err);
  // Both hosts have read the pause once the counter stands still for 3 s.
  double ticks = -1;
  REQUIRE(wait_within(kGenerousMs, [&] {
    double before = metric(a, "dq_schedule_ticks_added_total", "beat");
    sleep_ms(3000);
    ticks = metric(a, "dq_schedule_ticks_added_total", "beat");
    return ticks == before && ticks > 0;
  }));
  REQUIRE(wait_within(kGenerousMs,
                      [&] { return static_cast<double>(callback.requests().size()) >= ticks; }));
  std::map<std::string, int> by_id = deliveries_by_id(callback);
  std::set<int64_t> delivered;
  int twice = 0;
  for (const auto& [id, count] : by_id) {
    twice += count > 1 ? 1 : 0;
    delivered.insert(tick_of(id));
  }
  int64_t first = *delivered.begin();
  int64_t last = *delivered.rbegin();
  int missing = static_cast<int>((last - first) / 1000 + 1) - static_cast<int>(delivered.size());
  MESSAGE("ticks added " << ticks << ", delivered " << by_id.size() << ", twice " << twice
                         << ", missing " << missing << " between " << format_utc_instant(first)
                         << " and " << format_utc_instant(last));
  CHECK(twice == 0);
  CHECK(missing == 0);
  CHECK(delivered.count(-1) == 0);
  CHECK(static_cast<double>(by_id.size()) == ticks);
  CHECK(metric(a, "dq_schedule_ticks_skipped_total", "beat") == 0);
  CHECK(ticks >= 28);  // ~30 s, less what it took B to read the schedule
}

TEST_CASE("a restart after 10 s down: catch-up one runs the latest missed tick once, none never") {
  TestRedis redis;
  DqdOptions options;
  options.shards = {redis.address()};
  options.timers = 1;
  options.consumers = 0;  // the jobs stay, with their creation times, to be looked at
  DqdProcess dqd(options);
  CallbackServer callback;
  dqd.start();
  add_topic(dqd, "one", callback.url());
  add_topic(dqd, "none", callback.url());
  HttpClient http;
  for (const char* name : {"one", "none"}) {
    HttpResult added =
        http.post(schedules_url(dqd, name), Json{{"spec", "@every 3s"}, {"catch_up", name}}.dump());
    REQUIRE_MESSAGE(added.status == 201, added.body);
  }
  auto jobs_of = [&](const std::string& topic) {
    return http.get(dqd.jobs_url(topic) + "?state=ready&limit=500").json()["jobs"];
  };
  REQUIRE(wait_within(kGenerousMs,
                      [&] { return jobs_of("one").size() >= 2 && jobs_of("none").size() >= 2; }));
  REQUIRE(dqd.stop() == 0);
  sleep_ms(10000);  // down for 10 s: three or four ticks of each are missed
  int64_t started_at = wall_ms();
  dqd.start();
  // Ticks after the restart are added again.
  REQUIRE(wait_within(kGenerousMs, [&] {
    for (const char* topic : {"one", "none"}) {
      bool after = false;
      for (const Json& job : jobs_of(topic)) {
        after = after || tick_of(job["id"].get<std::string>()) > started_at + 3000;
      }
      if (!after) return false;
    }
    return true;
  }));
  // Judged by the runner's own rule (common/store/schedule_ticks.h): at its
  // first pass after the restart, a tick more than kTickSlackMs old was
  // missed; "one" adds the latest of those, "none" none. On a busy machine
  // later passes may find ticks late too (the same rule), so those are not
  // counted here; the skipped metric is then at least the first pass's.
  for (const std::string topic : {"one", "none"}) {
    INFO("catch-up " << topic);
    std::set<int64_t> ticks;
    int64_t last_before = 0;                            // the last tick added before the stop
    int64_t first_tick = 0, first_created = INT64_MAX;  // the first job added after the restart
    for (const Json& job : jobs_of(topic)) {
      int64_t tick = tick_of(job["id"].get<std::string>());
      int64_t created = job["created_at_ms"].get<int64_t>();
      CHECK(ticks.insert(tick).second);
      // A tick may be added while the stop is under way: every job created
      // before the restart is the old process's.
      if (created < started_at) {
        last_before = std::max(last_before, tick);
      } else if (created < first_created || (created == first_created && tick < first_tick)) {
        // One step adds the latest missed tick and the ticks of the slack
        // at one instant: the first job is the oldest tick of the first step.
        first_created = created;
        first_tick = tick;
      }
    }
    REQUIRE(last_before > 0);
    REQUIRE(first_created != INT64_MAX);
    // Ticks missed at the first pass: every 3 s after last_before, up to
    // first_created - kTickSlackMs.
    int64_t missed = (first_created - kTickSlackMs - last_before) / 3000;
    int64_t latest_missed = last_before + missed * 3000;
    int64_t added_between = 0;  // jobs for ticks after last_before, before first_tick
    for (int64_t tick : ticks) {
      added_between += tick > last_before && tick < first_tick ? 1 : 0;
    }
    double skipped = metric(dqd, "dq_schedule_ticks_skipped_total", topic);
    MESSAGE("catch-up " << topic << ": " << missed << " tick(s) missed at the first pass after "
                        << (first_created - started_at) << " ms; first job's tick "
                        << (first_tick - last_before) / 3000
                        << " step(s) after the last before the "
                        << "stop; " << skipped << " skipped");
    CHECK(missed >= 2);  // 10 s down, 3 s ticks
    CHECK(added_between == 0);
    if (topic == "one") {
      CHECK(first_tick == latest_missed);  // the latest missed, once
      CHECK(skipped >= static_cast<double>(missed - 1));
    } else {
      CHECK(first_tick > latest_missed);  // no missed tick is added
      CHECK(skipped >= static_cast<double>(missed));
    }
  }
}

}  // namespace dq::test
