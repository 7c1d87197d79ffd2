// The fault suite's scenarios (see scenarios.h).
#include "tests/fault/scenarios.h"

#include <doctest/doctest.h>
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>

#include "common/alerts/alert_outbox.h"
#include "common/core/json.h"
#include "common/core/master_status.h"
#include "common/core/shard.h"
#include "common/store/job.h"
#include "tests/fault/shard_states.h"
#include "tests/fault/world.h"
#include "tests/support/e2e.h"
#include "tests/support/http_client.h"
#include "tests/support/idle_connections.h"
#include "tests/support/process_tree.h"
#include "tests/support/run_program.h"
#include "tests/support/text_files.h"

namespace dq::test {
namespace {

constexpr int kSettleMs = 30000;            // the longest a scenario waits for its deliveries
constexpr int kSettleWithLossesMs = 10000;  // ... when it loses jobs on purpose

int64_t steady_ms() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

// Calls `step(i)` every `every_ms` until `for_ms` have passed.
template <typename Step>
void every(int every_ms, int for_ms, Step step) {
  int64_t end = steady_ms() + for_ms;
  for (int i = 0; steady_ms() < end; ++i) {
    step(i);
    sleep_ms(every_ms);
  }
}

const std::vector<std::pair<std::string, CallbackFault>> kPlainTopics = {
    {"alpha", CallbackFault::none}, {"beta", CallbackFault::slow}};

void kill_children_in_turn(World& world, int load_ms) {
  const char* kinds[] = {"dq-server_", "dq-timer_", "dq-consume_", "dq-redis-checker"};
  every(250, load_ms, [&](int i) {
    std::vector<pid_t> pids = children_titled(world.master(), kinds[i % 4]);
    if (!pids.empty()) {
      kill(pids[(i / 4) % pids.size()], SIGKILL);
    }
  });
}

void kill_master_and_restart(World& world, int load_ms) {
  for (int round = 0; round < 2; ++round) {
    sleep_ms(load_ms / 3);
    world.hosts[0]->kill9();
    world.hosts[0]->start();  // at once: waits until it answers /healthz
  }
  sleep_ms(load_ms / 3);
}

void kill_redis_and_restart(World& world, int load_ms) {
  for (TestRedis* redis : {&world.first, &world.second}) {
    sleep_ms(load_ms / 4);
    redis->kill9();
    sleep_ms(500);
    redis->start();  // same port, same AOF
    apply_fsync_setting(*redis);
  }
  sleep_ms(load_ms / 4);
}

void stop_one_shard_for_a_while(World& world, int load_ms) {
  sleep_ms(load_ms / 5);
  world.first.stop();
  sleep_ms(load_ms * 3 / 5);
  world.first.start();
  apply_fsync_setting(world.first);
  sleep_ms(load_ms / 5);
}

void kill_one_shard_for_a_while(World& world, int load_ms) {
  sleep_ms(load_ms / 5);
  world.fault_at_ms = steady_ms();
  world.first.kill9();
  sleep_ms(load_ms * 3 / 5);
  world.first.start();  // same port, same AOF
  apply_fsync_setting(world.first);
  sleep_ms(load_ms / 5);
}

// How long after the kill an add may still have been sent on the dead
// connection: until dq read its end (one turn of its loop, on a loaded
// machine a few ms).
constexpr int64_t kConnectionSeenDeadMs = 200;

// One home per id: an add whose home was killed is refused, 503, nothing
// written; the producer adds it again until its home is back. 504 only for
// an add sent on the connection as the shard died (its outcome is unknown).
void adds_answered_201_or_503(World& world, const std::vector<AcceptedJob>&, TallyRow& row) {
  std::map<long, int> answers;
  int in_flight_at_kill = 0;
  int other = 0;
  for (const AddAnswer& answer : world.add_answers) {
    ++answers[answer.status];
    if (answer.status == 200 || answer.status == 201 || answer.status == 503) {
      continue;
    }
    bool at_kill = answer.status == 504 &&
                   answer.sent_ms <= world.fault_at_ms + kConnectionSeenDeadMs &&
                   answer.answered_ms >= world.fault_at_ms;
    in_flight_at_kill += at_kill;
    other += !at_kill;
  }
  std::ostringstream note;
  note << "answers:";
  for (const auto& [status, n] : answers) {
    note << " " << n << "x" << status;
  }
  note << " (" << in_flight_at_kill << " 504 sent as the shard died)";
  row.note += (row.note.empty() ? "" : "; ") + note.str();
  CHECK_MESSAGE(answers[503] > 0, "no add was refused while the shard was down: " << note.str());
  CHECK_MESSAGE(other == 0, "an answer other than 201, 200 or 503: " << note.str());
  CHECK_MESSAGE(row.given_up == 0, "a refused add was never taken: " << note.str());
}

void hang_one_shard(World& world, int load_ms) {
  sleep_ms(load_ms / 5);
  kill(world.second.pid(), SIGSTOP);
  sleep_ms(load_ms * 3 / 5);
  kill(world.second.pid(), SIGCONT);
  sleep_ms(load_ms / 5);
}

// The second shard stalls 3 s, twice: adds sent to it then answer 504 and
// Redis runs them when it resumes; the load retries each 3 s later, when
// many of those jobs have run already (with no dedup window, one of 1,489
// jobs was delivered twice here).
void stall_second_shard_twice(World& world, int load_ms) {
  for (int round = 0; round < 2; ++round) {
    sleep_ms(load_ms / 6);
    kill(world.second.pid(), SIGSTOP);
    sleep_ms(3000);
    kill(world.second.pid(), SIGCONT);
  }
  sleep_ms(load_ms / 6);
}

// The stalls answered some adds 504 (else the scenario tested nothing).
void adds_answered_504(World& world, const std::vector<AcceptedJob>&, TallyRow& row) {
  size_t timeouts = 0;
  for (const auto& answer : world.add_answers) {
    timeouts += answer.status == 504 || answer.status == 0 ? 1 : 0;
  }
  CHECK_MESSAGE(timeouts > 0, "no add answered 504: the stalls tested nothing");
  row.note += (row.note.empty() ? "" : "; ") + std::to_string(timeouts) +
              " adds answered 504 or nothing, each retried 3 s later";
}

void reload_in_a_loop(World& world, int load_ms) {
  every(400, load_ms, [&](int) { kill(world.master(), SIGUSR2); });
}

void just_load(World&, int load_ms) { sleep_ms(load_ms); }

// 20,000 connections that send nothing, opened by helper processes against
// the first host (open files limit 1,024) from the start of the load; they
// stay open until the jobs are counted.
constexpr size_t kIdleFlood = 20000;
void idle_connection_flood(World& world, int load_ms) {
  world.fault_at_ms = steady_ms();
  world.flood = std::make_unique<IdleFlood>(world.hosts[0]->http_port(), kIdleFlood);
  sleep_ms(load_ms);
}

// Every flood connection got opened; an add answers with all of them open.
void adds_kept_answering(World& world, const std::vector<AcceptedJob>&, TallyRow& row) {
  size_t opened = world.flood->opened();
  int64_t open_ms = steady_ms() - world.fault_at_ms;
  HttpClient http;
  long status = http.post(world.hosts[0]->jobs_url("alpha"),
                          Json{{"id", "after-flood"}, {"body", 1}, {"delay", 3600}}.dump())
                    .status;
  size_t closed = world.flood->closed_by_server();
  world.flood.reset();
  std::ostringstream note;
  note << opened << " idle connections (all open " << open_ms / 1000 << " s after the start), "
       << closed << " closed by dq, oldest first; an add then: " << status;
  row.note += (row.note.empty() ? "" : "; ") + note.str();
  CHECK(opened == kIdleFlood);
  CHECK(status == 201);
  CHECK_MESSAGE(row.given_up == 0, "adds went unanswered during the flood");
}

// The first shard is slow all along (kSlowShardDelayMs each way) and stalls
// once (every byte held) for longer than the hosts' 500 ms command timeout.
// Adds of its ids during the stall are held copies on the other shard, which
// the timers settle at one slow round trip each once it answers: a longer
// stall makes the scenario much longer.
constexpr int kStallMs = 800;

// The home shard of a job (0 the first, 1 the second) on the world's shards.
size_t home_of(const World& world, const std::string& topic, const std::string& id) {
  std::string list;
  for (const auto& shard : world.shards) {
    list += (list.empty() ? "" : ",") + shard;
  }
  auto shards = parse_shard_list(list);
  REQUIRE(shards.is_ok());
  return shard_order(*shards, job_key(topic, id))[0];
}

// While the first shard stalls, the scenario adds 20 jobs whose home is the
// fast shard itself (one batch, due 1 s later): the load's producers each
// wait on a refused add of the slow shard's ids before the next, and on a
// loaded machine they may add none of the fast shard's in the whole run
// (5 jobs, all the slow shard's, once under ASan), which left the check
// with nothing to look at.
void add_fast_shard_jobs(World& world) {
  Json jobs = Json::array();
  for (int i = 0; jobs.size() < 20; ++i) {
    std::string id = "fast-" + std::to_string(i);
    if (home_of(world, "alpha", id) == 1) {
      jobs.push_back(Json{{"id", id}, {"body", i}, {"delay", 1.0}});
    }
  }
  HttpClient http;
  auto added = http.post(world.hosts[0]->jobs_url("alpha") + "/batch", Json{{"jobs", jobs}}.dump());
  REQUIRE_MESSAGE(added.status == 200, added.body);
  Json answer = added.json();  // kept: the loop reads into it
  for (const auto& result : answer["results"]) {
    REQUIRE_MESSAGE(result["status"] == 201, result.dump());
    int64_t due = result["due_at_ms"].get<int64_t>();
    world.extra_accepted.push_back({"alpha/" + result["id"].get<std::string>(), due, due});
  }
}

void slow_shard_stalls(World& world, int load_ms) {
  sleep_ms(load_ms / 5);
  world.stall_first_shard(true);
  int64_t stalled_at = steady_ms();
  add_fast_shard_jobs(world);
  sleep_ms(std::max<int64_t>(0, kStallMs - (steady_ms() - stalled_at)));
  world.stall_first_shard(false);
  sleep_ms(std::max(0, load_ms * 4 / 5 - kStallMs));
}

// The second host (in its network namespace) loses Redis, the callback
// server and its producers for 3 s, then comes back; the load runs on.
constexpr int kPartitionMs = 3000;
void partition_second_host(World& world, int load_ms) {
  sleep_ms(load_ms / 2);
  world.ns->cut();
  sleep_ms(kPartitionMs);
  world.ns->restore();
  sleep_ms(load_ms / 2);
}

std::vector<pid_t> dq_processes(World& world) {
  std::vector<pid_t> pids = children_titled(world.master(), "dq-");
  pids.push_back(world.master());
  return pids;
}

// Notes dq's processes once every child is up (the master starts them just
// after /healthz answers), then lets the load run.
void load_on_a_full_log_disk(World& world, int load_ms) {
  const size_t children = 2 + 2 + 3 + 1;  // API servers, timers, consumers, checker
  wait_until(5000, [&] { return dq_processes(world).size() == children + 1; });
  world.noted_pids = dq_processes(world);
  sleep_ms(load_ms);
}

// Every first 2xx arrival's time, by key.
std::map<std::string, int64_t> first_answers(const World& world) {
  std::map<std::string, int64_t> first;
  for (const auto& arrival : world.faults.arrivals()) {
    if (arrival.status < 200 || arrival.status >= 300) {
      continue;
    }
    auto it = first.find(arrival.key);
    if (it == first.end() || arrival.arrived_ms < it->second) {
      first[arrival.key] = arrival.arrived_ms;
    }
  }
  return first;
}

// The fast shard's jobs are not held up by the slow one: counts the jobs of
// each shard (by home shard) answered more than 0.5 s after their due time
// (less than the stall; at most 1 in 20 of the fast shard's, for a busy machine).
void fast_shard_stays_on_time(World& world, const std::vector<AcceptedJob>& accepted,
                              TallyRow& row) {
  std::map<std::string, int64_t> answered = first_answers(world);
  size_t jobs[2] = {0, 0};
  size_t late[2] = {0, 0};
  int64_t worst[2] = {0, 0};
  for (const auto& job : accepted) {
    size_t slash = job.key.find('/');
    size_t home = home_of(world, job.key.substr(0, slash), job.key.substr(slash + 1));
    ++jobs[home];
    auto it = answered.find(job.key);
    if (it == answered.end()) {
      continue;
    }
    if (it->second - job.due_at_ms > 500) {
      ++late[home];
    }
    worst[home] = std::max(worst[home], it->second - job.due_at_ms);
  }
  std::ostringstream note;
  note << "by " << world.slowed_by << "; >0.5 s late: slow shard " << late[0] << "/" << jobs[0]
       << " (worst " << worst[0] << " ms), fast shard " << late[1] << "/" << jobs[1] << " (worst "
       << worst[1] << " ms)";
  row.note += (row.note.empty() ? "" : "; ") + note.str();
  CHECK(jobs[1] > 0);
  CHECK_MESSAGE(late[1] * 20 <= jobs[1], "the slow shard held up the fast one: " << note.str());
}

// Calls of this host's consumers that the callback server answered 2xx
// (its notify log's "result=ok" lines).
size_t calls_answered_ok(const DqdProcess& host) {
  std::istringstream log(read_logs(host.log_dir(), "notify"));
  size_t ok = 0;
  for (std::string line; std::getline(log, line);) {
    ok += line.find(" result=ok ") != std::string::npos ? 1 : 0;
  }
  return ok;
}

// The partitioned host answers again, and its consumers delivered jobs: a
// host whose calls cannot reach the callback server (a callback URL it cannot
// reach) would fail every attempt it makes, and the scenario would test
// another host than the one it cuts off.
void partitioned_host_came_back(World& world, const std::vector<AcceptedJob>&, TallyRow& row) {
  HttpClient http;
  bool healthy =
      wait_until(5000, [&] { return http.get(world.host_urls()[1] + "/healthz").status == 200; });
  size_t delivered_there = calls_answered_ok(*world.hosts[1]);
  row.note += std::string(row.note.empty() ? "" : "; ") + "cut off 3 s (netns " +
              world.ns->inside_ip() + ")" + (healthy ? "" : ", NOT BACK") + ", it delivered " +
              std::to_string(delivered_there);
  CHECK_MESSAGE(healthy, "the partitioned host did not answer /healthz after the partition");
  CHECK_MESSAGE(delivered_there > 0, "the partitioned host delivered no job");
}

// CPU seconds used so far by these processes (utime + stime).
double cpu_seconds(const std::vector<pid_t>& pids) {
  double ticks = 0;
  for (pid_t pid : pids) {
    std::ifstream in("/proc/" + std::to_string(pid) + "/stat");
    std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    std::istringstream fields(text.substr(text.rfind(')') + 2));
    std::string field;
    for (int i = 3; i <= 15 && fields >> field; ++i) {
      if (i >= 14) {
        ticks += std::stod(field);
      }
    }
  }
  return ticks / static_cast<double>(sysconf(_SC_CLK_TCK));
}

double dropped_log_lines(World& world) {
  HttpClient http;
  std::istringstream page(http.get(world.hosts[0]->base_url() + "/metrics").body);
  double dropped = 0;
  for (std::string line; std::getline(page, line);) {
    if (line.rfind("dq_log_lines_dropped_total{", 0) == 0) {
      dropped += std::stod(line.substr(line.rfind(' ') + 1));
    }
  }
  return dropped;
}

// The log disk was full (lines were dropped and counted), no dq process died
// or was replaced, and none spins: idle CPU over 1 s is printed and bounded.
void log_disk_full_harmless(World& world, const std::vector<AcceptedJob>&, TallyRow& row) {
  double dropped = dropped_log_lines(world);
  std::vector<pid_t> now = dq_processes(world);
  double before = cpu_seconds(now);
  sleep_ms(1000);
  double idle_cpu = cpu_seconds(now) - before;
  std::set<pid_t> started(world.noted_pids.begin(), world.noted_pids.end());
  std::set<pid_t> still(now.begin(), now.end());
  std::ostringstream note;
  note << "log lines dropped " << dropped << "; processes " << started.size() << " -> "
       << still.size() << (started == still ? " (same)" : " (CHANGED)") << "; idle cpu " << idle_cpu
       << " s in 1 s";
  row.note += (row.note.empty() ? "" : "; ") + note.str();
  CHECK_MESSAGE(dropped > 0, "the log disk was not full: " << note.str());
  CHECK_MESSAGE(started == still, "a dq process died or was respawned: " << note.str());
  CHECK_MESSAGE(idle_cpu < 0.5, "a dq process spins: " << note.str());
}

// Keys of accepted jobs that dq still holds (GET is not 404), asked through
// the honest host until none is left or 5 s passed (acks may still land).
std::set<std::string> still_held(World& world, const std::vector<AcceptedJob>& accepted) {
  std::set<std::string> held;
  for (const auto& job : accepted) {
    held.insert(job.key);
  }
  HttpClient http;
  wait_until(5000, [&] {
    for (auto it = held.begin(); it != held.end();) {
      size_t slash = it->find('/');
      std::string url =
          world.hosts[0]->jobs_url(it->substr(0, slash)) + "/" + it->substr(slash + 1);
      it = http.get(url).status == 404 ? held.erase(it) : std::next(it);
    }
    return held.empty();
  });
  return held;
}

bool all_delivered(const World& world, const std::vector<AcceptedJob>& accepted) {
  std::set<std::string> answered;
  for (const auto& arrival : world.faults.arrivals()) {
    if (arrival.status >= 200 && arrival.status < 300) {
      answered.insert(arrival.key);
    }
  }
  for (const auto& job : accepted) {
    if (!answered.count(job.key)) {
      return false;
    }
  }
  return true;
}

// USR2 while every callback of the "long" topic takes 12 s (its timeout is
// 20 s, the hosts' drain_timeout_ms 3 s): the old consumers finish and ack
// the calls they hold; none goes out again when its lease would have ended.
void reload_during_long_callbacks(World& world, int load_ms) {
  sleep_ms(load_ms * 2 / 3);
  world.fault_at_ms = steady_ms();
  kill(world.master(), SIGUSR2);
  sleep_ms(load_ms / 3);
}

// Counts again once every lease taken before the reload has ended (20 s
// timeout + 0.5 s margin, and a sweep): a call the reload had cut off
// would have gone out again by then.
void no_second_delivery_after_the_leases(World& world, const std::vector<AcceptedJob>& accepted,
                                         TallyRow& row) {
  int64_t waited_from = steady_ms();
  int64_t leases_over = world.fault_at_ms + 20000 + 500 + 2500;
  sleep_ms(static_cast<int>(std::max<int64_t>(0, leases_over - steady_ms())));
  TallyRow again =
      tally(row.scenario, accepted, world.faults.arrivals(), still_held(world, accepted));
  row.lost = again.lost;
  row.lost_keys = again.lost_keys;
  row.delivered = again.delivered;
  row.duplicated = again.duplicated;
  row.attempts = again.attempts;
  row.seconds += static_cast<double>(steady_ms() - waited_from) / 1000.0;
  std::vector<pid_t> consumers = children_titled(world.master(), "dq-consume_");
  row.note += std::string(row.note.empty() ? "" : "; ") + "counted again " +
              std::to_string((steady_ms() - world.fault_at_ms) / 1000) + " s after the USR2; " +
              std::to_string(consumers.size()) + " consumers now";
}

// The first host's config file as a save in progress, a full disk or a
// slow copy leave it, each state kept past the automatic reload's settle
// time (2 s): cut before [sqlite], then empty, then written again in pieces
// 300 ms apart. The reload must take none of them.
constexpr int kPastSettleMs = 3000;
void half_written_config(World& world, int load_ms) {
  const std::string path = world.hosts[0]->config_path();
  const std::string whole = read_text(path);
  auto write = [&](const std::string& text) {
    std::ofstream(path, std::ios::binary | std::ios::trunc) << text;
  };
  world.fault_at_ms = steady_ms();
  write(whole.substr(0, whole.find("[sqlite]")));
  sleep_ms(kPastSettleMs);
  write("");
  sleep_ms(kPastSettleMs);
  {
    std::ofstream out(path, std::ios::binary | std::ios::trunc);
    for (size_t at = 0; at < whole.size(); at += whole.size() / 6 + 1) {
      out << whole.substr(at, whole.size() / 6 + 1) << std::flush;
      sleep_ms(300);
    }
  }
  sleep_ms(std::max(kPastSettleMs, load_ms - static_cast<int>(steady_ms() - world.fault_at_ms)));
}

// No reload happened, the err log says why, and every add was answered.
void config_never_taken(World& world, const std::vector<AcceptedJob>&, TallyRow& row) {
  auto status = read_master_status(world.hosts[0]->dir() + "/dqd.pid");
  int generation = status.is_ok() ? status->value("generation", 0) : 0;
  std::string errors = read_logs(world.hosts[0]->log_dir(), "err");
  bool cut_said = errors.find("the config file is the running one cut short") != std::string::npos;
  bool empty_said = errors.find("the config file is empty") != std::string::npos;
  bool slow_said = errors.find("the config file is still being written") != std::string::npos;
  row.note += std::string(row.note.empty() ? "" : "; ") +
              "cut, emptied, rewritten slowly: " + "generation " + std::to_string(generation) +
              ", refusals logged " +
              (cut_said && empty_said && slow_said ? "(all three)" : "(NOT ALL)");
  CHECK(generation == 1);
  CHECK(cut_said);
  CHECK(empty_said);
  CHECK(slow_said);
  CHECK_MESSAGE(row.given_up == 0, "adds went unanswered or were refused while the file changed");
}

// The first host's registry file deleted under it while the load runs (an
// operator's rm, a cleanup job), and dqctl asked to add a topic: dqd serves
// on from what it read, says so, and dqctl makes no new, empty registry
// beside it (which would split the hosts' topics). (A child respawned after
// the delete has no file to read: tests/test_registry_file.cc covers that
// it makes no new one either; it serves no topic until dqd restarts.)
struct RegistryDeleted {
  bool file_came_back = false;
  int dqctl_exit = -1;
  std::string dqctl_err;
};
RegistryDeleted g_registry_deleted;

void delete_the_registry_file(World& world, int load_ms) {
  g_registry_deleted = RegistryDeleted{};
  DqdProcess& host = *world.hosts[0];
  sleep_ms(load_ms / 4);
  world.fault_at_ms = steady_ms();
  std::filesystem::remove(host.sqlite_path());
  sleep_ms(500);
  RunResult added = run_dqctl({"-c", host.config_path(), "topic", "add", "made-after-delete",
                               "--callback", "http://127.0.0.1:9/x"},
                              host.dir());
  g_registry_deleted.dqctl_exit = added.exit_code;
  g_registry_deleted.dqctl_err = added.err;
  sleep_ms(std::max(1000, load_ms - static_cast<int>(steady_ms() - world.fault_at_ms)));
  g_registry_deleted.file_came_back = std::filesystem::exists(host.sqlite_path());
}

// Every add was answered, the err log and /healthz say what happened, and
// no registry file was made again.
void registry_delete_said(World& world, const std::vector<AcceptedJob>&, TallyRow& row) {
  DqdProcess& host = *world.hosts[0];
  std::string errors = read_logs(host.log_dir(), "err");
  bool logged = errors.find("was deleted") != std::string::npos;
  Json health = HttpClient().get(host.base_url() + "/healthz").json();
  bool health_says = health.is_object() && health.contains("registry") &&
                     health["registry"].value("ok", true) == false;
  row.note += std::string(row.note.empty() ? "" : "; ") + "dq.db deleted: " + "dqctl exit " +
              std::to_string(g_registry_deleted.dqctl_exit) +
              (g_registry_deleted.file_came_back ? ", a NEW FILE was made" : ", no new file") +
              (logged ? ", err log says so" : ", NOT LOGGED") +
              (health_says ? ", /healthz registry ok=false" : ", /healthz SILENT");
  CHECK_MESSAGE(g_registry_deleted.dqctl_exit == 3, g_registry_deleted.dqctl_err);
  CHECK_FALSE(g_registry_deleted.file_came_back);
  CHECK(logged);
  CHECK(health_says);
  CHECK_MESSAGE(row.given_up == 0, "adds of known topics went unanswered or were refused");
}

// The one consumer of the host is stopped (SIGSTOP, as a GC pause, swap or a
// VM's stolen time would) for 3.5 s while its 32 calls are open; the
// callback server answers each within 150 ms, during the pause. A burst of
// 300 jobs due at once fills its slots first; the load runs beside it.
constexpr int kPauseBurst = 300;
constexpr int kConsumerPauseMs = 3500;

void pause_the_consumer(World& world, int load_ms) {
  sleep_ms(load_ms / 4);
  HttpClient http;
  Json jobs = Json::array();
  int64_t due = wall_ms() + 1000;
  for (int i = 0; i < kPauseBurst; ++i) {
    jobs.push_back(Json{{"id", "pause-" + std::to_string(i)}, {"body", i}, {"delay", 1.0}});
  }
  auto added = http.post(world.hosts[0]->jobs_url("alpha") + "/batch", Json{{"jobs", jobs}}.dump());
  REQUIRE(added.status == 200);
  for (int i = 0; i < kPauseBurst; ++i) {
    world.extra_accepted.push_back({"alpha/pause-" + std::to_string(i), due, due});
  }
  std::vector<pid_t> consumers = children_titled(world.master(), "dq-consume_");
  REQUIRE(consumers.size() == 1);
  bool full = wait_until(10000, [&] { return world.callback.open_now() >= kOneConsumerCalls; });
  world.fault_at_ms = steady_ms();
  kill(consumers[0], SIGSTOP);
  size_t open = world.callback.open_now();
  sleep_ms(kConsumerPauseMs);
  size_t still_open = world.callback.open_now();
  kill(consumers[0], SIGCONT);
  world.fault_note = "stopped " + std::to_string(kConsumerPauseMs) + " ms with " +
                     std::to_string(open) + " calls open" + (full ? "" : " (slots never full)") +
                     ", " + std::to_string(open - std::min(open, still_open)) +
                     " answered in the pause";
  sleep_ms(std::max(0, load_ms * 3 / 4 - kConsumerPauseMs));
}

// Failed attempts (every topic of the host) and circuit alerts queued.
int64_t failed_attempts(World& world) {
  HttpClient http;
  int64_t failed = 0;
  for (const char* topic : {"alpha", "beta"}) {
    Json stats = http.get(world.hosts[0]->base_url() + "/v1/topics/" + topic + "/stats").json();
    failed += stats["total"]["failed"].get<int64_t>();
  }
  return failed;
}

// The pause cost nothing: no job was called twice, no attempt failed (none
// was judged late), no circuit alert was queued.
void pause_was_no_timeout(World& world, const std::vector<AcceptedJob>& accepted, TallyRow& row) {
  std::map<std::string, int> calls;
  for (const auto& arrival : world.faults.arrivals()) {
    ++calls[arrival.key];
  }
  size_t called_again = 0;
  for (const auto& job : accepted) {
    called_again += calls[job.key] > 1 ? 1 : 0;
  }
  int64_t failed = failed_attempts(world);
  auto outbox = AlertOutbox::open(world.hosts[0]->sqlite_path());
  REQUIRE(outbox.is_ok());
  auto recent = (*outbox)->recent(1000);
  REQUIRE(recent.is_ok());
  int circuit_alerts = 0;
  for (const auto& event : *recent) {
    circuit_alerts += event.kind.rfind("circuit_", 0) == 0 ? 1 : 0;
  }
  std::ostringstream note;
  note << world.fault_note << "; jobs called more than once " << called_again
       << ", failed attempts " << failed << ", circuit alerts " << circuit_alerts;
  row.note += (row.note.empty() ? "" : "; ") + note.str();
  CHECK(called_again == 0);
  CHECK(failed == 0);
  CHECK(circuit_alerts == 0);
}

}  // namespace

int load_ms_for_this_run() { return std::getenv("DQ_SANITIZE") ? 2500 : 4000; }

std::vector<Scenario> all_scenarios() {
  const char* consumer_killed =
      "a consumer killed after a 2xx, before its ack: the lease expires, the job goes out again";
  const char* ack_lost =
      "acks to a dead or hung shard fail (outcome unknown): the lease expires, the job goes out "
      "again";
  const char* cut_off =
      "a host cut off after a 2xx, before its ack, or with acks in flight: the lease expires, the "
      "job goes out again";
  const char* refused_acks =
      "acks refused while the shard refuses writes: the lease expires, the job goes out again";
  const Setup plain = Setup::plain;
  return {
      {"kill -9 children", kPlainTopics, plain, true, consumer_killed, kill_children_in_turn,
       nullptr, 1.0, ""},
      {"kill -9 master, restart", kPlainTopics, plain, false, "", kill_master_and_restart, nullptr,
       1.0, ""},
      {"kill -9 redis, restart", kPlainTopics, plain, true, ack_lost, kill_redis_and_restart,
       nullptr, 1.0, ""},
      {"one shard of 2 down", kPlainTopics, plain, true, ack_lost, stop_one_shard_for_a_while,
       nullptr, 1.0, ""},
      {"one shard of 2 hung", kPlainTopics, plain, true, ack_lost, hang_one_shard, nullptr, 1.0,
       ""},
      {"one shard of 2 killed", kPlainTopics, plain, true, ack_lost, kill_one_shard_for_a_while,
       adds_answered_201_or_503, 1.0, ""},
      {"add retried after 504", kPlainTopics, plain, false, "", stall_second_shard_twice,
       adds_answered_504, 1.0, "", 3000, 8},
      {"callbacks misbehave",
       {{"e500", CallbackFault::error500},
        {"e429", CallbackFault::busy429},
        {"hang", CallbackFault::hang},
        {"hangup", CallbackFault::hang_up},
        {"redirect", CallbackFault::redirect},
        {"slow", CallbackFault::slow}},
       plain,
       false,
       "",
       just_load,
       nullptr,
       1.0,
       ""},
      {"USR2 reloads in a loop", kPlainTopics, plain, false, "", reload_in_a_loop, nullptr, 1.0,
       ""},
      {"2nd host clock +10s", kPlainTopics, Setup::skewed_host, false, "", just_load, nullptr, 1.0,
       ""},
      {"slow shard, stalls", kPlainTopics, Setup::slow_first_shard, true, ack_lost,
       slow_shard_stalls, fast_shard_stays_on_time, 0.5, ""},
      {"2nd host partitioned 3s", kPlainTopics, Setup::partitioned_host, true, cut_off,
       partition_second_host, partitioned_host_came_back, 0.5, ""},
      {"log disk full", kPlainTopics, Setup::log_disk_full, false, "", load_on_a_full_log_disk,
       log_disk_full_harmless, 0.3, ""},
      {"a full shard", kPlainTopics, plain, true, refused_acks, fill_first_shard_for_a_while,
       refusal_seen("OOM"), 0.5, ""},
      {"a read-only shard", kPlainTopics, plain, true, refused_acks,
       first_shard_read_only_for_a_while, refusal_seen("replica"), 0.5, ""},
      {"a shard restarted empty", kPlainTopics, plain, true, ack_lost, restart_first_shard_empty,
       data_loss_reported, 0.5, "the shard's data is gone: dq reports it (alert, metrics)"},
      {"USR2 during 12 s callbacks",
       {{"alpha", CallbackFault::none},
        {"beta", CallbackFault::none},
        {"gamma", CallbackFault::none},
        {"long", CallbackFault::takes12s}},
       plain,
       false,
       "",
       reload_during_long_callbacks,
       no_second_delivery_after_the_leases,
       0.375,
       ""},
      {"20,000 idle connections", kPlainTopics, Setup::few_descriptors, false, "",
       idle_connection_flood, adds_kept_answering, 1.0, ""},
      {"half-written config file", kPlainTopics, plain, false, "", half_written_config,
       config_never_taken, 1.0, ""},
      {"registry file deleted", kPlainTopics, plain, false, "", delete_the_registry_file,
       registry_delete_said, 1.0, ""},
      {"a consumer paused 3.5 s",
       {{"alpha", CallbackFault::quick}, {"beta", CallbackFault::quick}},
       Setup::one_consumer,
       false,
       "",
       pause_the_consumer,
       pause_was_no_timeout,
       1.5,
       ""},
  };
}

TallyRow run_scenario(const Scenario& scenario, int round) {
  int64_t started = steady_ms();
  World world(scenario);
  if (!world.skipped.empty()) {
    TallyRow row;
    row.scenario = scenario.name;
    row.note = "SKIPPED: " + world.skipped;
    return row;
  }
  std::vector<std::string> topics;
  for (const auto& topic : scenario.topics) {
    topics.push_back(topic.first);
  }
  Load load(world.host_urls(), topics, "r" + std::to_string(round) + "-", scenario.load_threads, 5,
            scenario.retry_after_unknown_ms);
  load.start();
  scenario.inject(world, static_cast<int>(load_ms_for_this_run() * scenario.load_share));
  load.stop();
  std::vector<AcceptedJob> accepted = load.accepted();
  accepted.insert(accepted.end(), world.extra_accepted.begin(), world.extra_accepted.end());
  world.add_answers = load.answers();
  // Lost jobs never arrive: a scenario that loses some on purpose waits less.
  wait_until(scenario.why_losses.empty() ? kSettleMs : kSettleWithLossesMs,
             [&] { return all_delivered(world, accepted); });
  sleep_ms(700);  // a duplicate on its way shows up by now
  world.heal();
  std::set<std::string> held = still_held(world, accepted);
  TallyRow row = tally(scenario.name, accepted, world.faults.arrivals(), held);
  row.given_up = static_cast<size_t>(load.given_up());
  row.seconds = static_cast<double>(steady_ms() - started) / 1000.0;
  if (row.duplicated > 0) {
    row.note = scenario.duplicates_allowed ? "dups allowed: " + scenario.why_duplicates
                                           : "DUPLICATES NOT ALLOWED HERE";
  }
  CAPTURE(scenario.name);
  if (scenario.check) {
    scenario.check(world, accepted, row);
  }
  if (row.before_answer > 0) {
    row.note += (row.note.empty() ? "" : "; ") + std::to_string(row.before_answer) +
                " before their 2xx's due_at_ms: an earlier attempt (504) was kept";
  }
  if ((row.lost > 0 && scenario.why_losses.empty()) || row.early > 0) {
    row.note = "FAILED; " + row.note;
  }
  CHECK(row.accepted > 0);
  std::string lost_keys;
  for (const auto& key : row.lost_keys) {
    lost_keys += " " + key;
  }
  if (scenario.why_losses.empty()) {
    CHECK_MESSAGE(row.lost == 0, "lost (first 10):" << lost_keys);
  } else {
    row.note += "; losses expected: " + scenario.why_losses;
  }
  CHECK(row.early == 0);
  if (!scenario.duplicates_allowed) {
    CHECK(row.duplicated == 0);
  }
  return row;
}

}  // namespace dq::test
