// Delivery benchmark (not a test): real redis-server(s), a real HTTP callback
// (answers 200 at once unless a case says otherwise), timer and consumer roles
// in their own processes, like tests/test_delivery.cc. Cases:
//   reference: plain POSTs           libcurl POSTs to the same callback, no dq.
//   drain: one topic                 JOBS jobs on one online topic, drained.
//   drain: four topics with ...      the same backlog on one of four online topics.
//   drain: healthy topic beside ...  a healthy topic drained while another
//                                    topic's callback never answers in time.
//   drain: one shard of two stalled  two shards, one SIGSTOPped for STALL_MS
//                                    during the drain.
//   lateness at a steady rate        RATE jobs/s for SECONDS, each due 1 s later.
// No commas in case names: doctest's -tc splits its filter at commas.
// A drain's jobs are all due at one instant D, chosen just after the adds end;
// the roles start before D, so at D the timer promotes the whole backlog and
// the consumers drain it. jobs/s = jobs / (last arrival - first arrival);
// lateness = callback arrival - due_at_ms (for a drain, mostly the job's place
// in the backlog divided by the rate).
// Each case appends one line per figure to $BENCH_RESULTS (when set), which
// bench/deliver_bench.sh turns into one summary table. See bench/README.md.
#define DOCTEST_CONFIG_IMPLEMENT_WITH_MAIN
#include <curl/curl.h>
#include <doctest/doctest.h>
#include <signal.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "bench/curl_reference.h"
#include "common/core/json.h"
#include "common/store/keys.h"
#include "tests/delivery_world.h"

using dq::now_ms;
using dq::test::DeliveryWorld;
using dq::test::RecordedRequest;
using dq::test::TestRedis;

namespace {

int env_int(const char* name, int fallback) {
  const char* value = std::getenv(name);
  return value ? std::atoi(value) : fallback;
}

// One line per figure for the script's summary table:
// case <TAB> jobs <TAB> jobs/s <TAB> p50 <TAB> p99 <TAB> max <TAB> note
void report(const std::string& name, long jobs, double rate, long p50, long p99, long max,
            const std::string& note = "") {
  std::printf("  => %s: %ld jobs, %.0f jobs/s, lateness p50 %ld ms, p99 %ld ms, max %ld ms%s%s\n",
              name.c_str(), jobs, rate, p50, p99, max, note.empty() ? "" : "; ", note.c_str());
  const char* path = std::getenv("BENCH_RESULTS");
  if (!path) {
    return;
  }
  if (FILE* out = std::fopen(path, "a")) {
    std::fprintf(out, "%s\t%ld\t%.0f\t%ld\t%ld\t%ld\t%s\n", name.c_str(), jobs, rate, p50, p99, max,
                 note.c_str());
    std::fclose(out);
  }
}

// One callback as the bench sees it: which job, when due, when it arrived.
struct Arrival {
  std::string topic;
  std::string id;
  int64_t due_ms = 0;
  int64_t arrived_ms = 0;
};

std::vector<Arrival> arrivals(const std::vector<RecordedRequest>& requests) {
  std::vector<Arrival> out;
  out.reserve(requests.size());
  for (const auto& request : requests) {
    auto body = dq::Json::parse(request.body);
    out.push_back({body["topic"].get<std::string>(), body["id"].get<std::string>(),
                   body["due_at_ms"].get<int64_t>(), request.arrived_ms});
  }
  return out;
}

struct Figures {
  long jobs = 0;
  double rate = 0;   // jobs / (last arrival - first arrival)
  long span_ms = 0;  // last arrival - first arrival
  long p50 = 0, p99 = 0, max = 0;
};

// The first arrival of each job (a duplicate is not a second job).
Figures figures(const std::vector<const Arrival*>& list) {
  Figures f;
  std::set<std::pair<std::string, std::string>> seen;
  std::vector<int64_t> lateness;
  int64_t first = INT64_MAX, last = INT64_MIN;
  for (const Arrival* a : list) {
    if (!seen.insert({a->topic, a->id}).second) {
      continue;
    }
    lateness.push_back(a->arrived_ms - a->due_ms);
    first = std::min(first, a->arrived_ms);
    last = std::max(last, a->arrived_ms);
  }
  if (lateness.empty()) {
    return f;
  }
  std::sort(lateness.begin(), lateness.end());
  auto pct = [&](double p) { return lateness[static_cast<size_t>(p * (lateness.size() - 1))]; };
  f.jobs = static_cast<long>(lateness.size());
  f.span_ms = static_cast<long>(last - first);
  f.rate = f.jobs * 1000.0 / std::max<int64_t>(1, last - first);
  f.p50 = static_cast<long>(pct(0.5));
  f.p99 = static_cast<long>(pct(0.99));
  f.max = static_cast<long>(lateness.back());
  return f;
}

void tune(DeliveryWorld& world) {
  world.config().consumer_concurrency = env_int("CONCURRENCY", 64);
  world.config().log_level = "warn";  // notify lines would measure the disk, not dq
  world.config().drain_timeout_ms = 3000;
}

void start_roles(DeliveryWorld& world) {
  world.start_timer();
  for (int i = 0; i < env_int("CONSUMERS", 2); ++i) {
    world.start_consumer(i);
  }
}

// The instant a backlog of `jobs` adds will be due: after the adds are
// expected to end (the add rate is measured on 300 adds of a topic nobody
// consumes, due in an hour; twice that time plus 1 s, as the other processes
// on a shared machine make it vary), so the roles are started and idle when
// the backlog comes due. An overrun is reported with the figures.
int64_t plan_due(DeliveryWorld& world, int jobs) {
  int64_t begin = now_ms();
  const int probes = 300;
  for (int i = 0; i < probes; ++i) {
    world.add_job("calibrate", "c" + std::to_string(i), now_ms() + int64_t{3600} * 1000);
  }
  double per_add_ms = double(now_ms() - begin) / probes;
  return now_ms() + static_cast<int64_t>(jobs * per_add_ms * 2.0) + 1000;
}

// Adds `jobs` jobs "<prefix><n>" of `topic`, all due at `due`.
void add_backlog(DeliveryWorld& world, const std::string& topic, const std::string& prefix,
                 int jobs, int64_t due) {
  for (int i = 0; i < jobs; ++i) {
    world.add_job(topic, prefix + std::to_string(i), due, "{\"n\":1}");
  }
}

// Roles start now; reports how far past the due instant the adds ran (the
// lateness figures include that much).
std::string start_before(DeliveryWorld& world, int64_t due) {
  int64_t overrun = now_ms() - due;
  start_roles(world);
  if (overrun <= 0) {
    return "";
  }
  std::printf("  (the adds ended %lld ms after the due time; lateness includes it)\n",
              static_cast<long long>(overrun));
  return "adds overran due by " + std::to_string(overrun) + " ms";
}

std::string join(const std::string& a, const std::string& b) {
  if (a.empty()) {
    return b;
  }
  if (b.empty()) {
    return a;
  }
  return a + "; " + b;
}

// VERBOSE=1: arrivals per 500 ms, and Redis's command counts (how many
// reserves, acks, promotes ran), to see where a drain spends its time.
void print_details(DeliveryWorld& world, const std::vector<Arrival>& all) {
  if (all.empty()) {
    return;
  }
  int64_t first = INT64_MAX;
  for (const auto& a : all) {
    first = std::min(first, a.arrived_ms);
  }
  std::map<int64_t, long> per_bucket;
  for (const auto& a : all) {
    ++per_bucket[(a.arrived_ms - first) / 500];
  }
  for (const auto& entry : per_bucket) {
    std::printf("  +%5lld ms: %ld arrivals\n", static_cast<long long>(entry.first) * 500,
                entry.second);
  }
  auto stats = world.store().shard(0).command({"INFO", "commandstats"});
  if (stats.is_ok() && (*stats)->type == REDIS_REPLY_STRING) {
    std::printf("%.*s\n", static_cast<int>((*stats)->len), (*stats)->str);
  }
}

// Drains JOBS jobs of topic "bench" with `idle` other topics online and empty.
Figures drain_with_idle_topics(int idle, const std::string& name) {
  const int jobs = env_int("JOBS", 50000);
  DeliveryWorld world;
  tune(world);
  world.add_topic(world.topic("bench"));
  for (int i = 0; i < idle; ++i) {
    world.add_topic(world.topic("idle" + std::to_string(i)));
  }
  int64_t due = plan_due(world, jobs);
  add_backlog(world, "bench", "j", jobs, due);
  std::string note = start_before(world, due);
  std::atomic<bool> done{false};
  std::thread sampler;
  if (std::getenv("VERBOSE")) {
    sampler = std::thread([&] {
      while (!done.load()) {
        auto counts =
            world.redis().command({"HMGET", dq::keys::counts(), "bench:d", "bench:r", "bench:w"});
        auto text = [&](size_t i) {
          auto* e = counts->element[i];
          return e->type == REDIS_REPLY_STRING ? std::string(e->str, e->len) : std::string("-");
        };
        std::printf("  sample %lld: delayed %s ready %s working %s arrived %zu\n",
                    static_cast<long long>(now_ms() - due), text(0).c_str(), text(1).c_str(),
                    text(2).c_str(), world.callback().count());
        std::this_thread::sleep_for(std::chrono::milliseconds(250));
      }
    });
  }
  bool all_came = world.callback().wait_for(jobs, 120000);
  done = true;
  if (sampler.joinable()) {
    sampler.join();
  }
  REQUIRE(all_came);
  auto all = arrivals(world.callback().requests());
  std::vector<const Arrival*> list;
  list.reserve(all.size());
  for (const auto& a : all) {
    list.push_back(&a);
  }
  Figures f = figures(list);
  if (std::getenv("VERBOSE")) {
    print_details(world, all);
  }
  report(name, f.jobs, f.rate, f.p50, f.p99, f.max,
         join("span " + std::to_string(f.span_ms) + " ms", note));
  return f;
}

}  // namespace

TEST_CASE("reference: plain POSTs") {
  const int jobs = env_int("JOBS", 50000);
  const int parallel = env_int("CONSUMERS", 2) * env_int("CONCURRENCY", 64);
  dq::test::CallbackServer callback;
  double rate = dq::bench::curl_post_cost(callback.url(), jobs, parallel).rate;
  report("reference: plain libcurl POSTs, " + std::to_string(parallel) + " in flight", jobs, rate,
         0, 0, 0, "no dq; lateness n/a");
}

TEST_CASE("drain: one topic") { drain_with_idle_topics(0, "drain: one topic online"); }

TEST_CASE("drain: four topics with one backlog") {
  drain_with_idle_topics(3, "drain: four topics online, backlog on one");
}

// The healthy topic drains JOBS jobs while HANG_JOBS jobs of another topic
// hold slots: its callback answers after 30 s, the topic times out at 2 s,
// and each failed attempt is retried (backoff unit 300 ms) up to 10 times.
TEST_CASE("drain: healthy topic beside a hanging one") {
  const int jobs = env_int("JOBS", 50000);
  const int hang_jobs = env_int("HANG_JOBS", 2000);
  DeliveryWorld world;
  tune(world);
  std::atomic<long> healthy{0}, hanging{0};
  world.callback().set_responder([&](const RecordedRequest& request, size_t) {
    dq::test::CallbackAnswer answer;
    if (request.path == "/hang") {
      ++hanging;
      answer.delay_ms = 30000;
    } else {
      ++healthy;
    }
    return answer;
  });
  auto hang = world.topic("hang", "/hang");
  hang.timeout_ms = 2000;
  world.add_topic(world.topic("bench"));
  world.add_topic(hang);
  int64_t due = plan_due(world, jobs + hang_jobs);
  // Hanging jobs first, so they are reserved at least as early as the healthy ones.
  add_backlog(world, "hang", "h", hang_jobs, due);
  add_backlog(world, "bench", "j", jobs, due);
  std::string note = start_before(world, due);
  int64_t deadline = now_ms() + 180000;
  while (healthy.load() < jobs && now_ms() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  REQUIRE(healthy.load() >= jobs);
  auto all = arrivals(world.callback().requests());
  std::vector<const Arrival*> list;
  int64_t first = INT64_MAX, last = INT64_MIN;
  for (const auto& a : all) {
    if (a.topic != "bench") {
      continue;
    }
    list.push_back(&a);
    first = std::min(first, a.arrived_ms);
    last = std::max(last, a.arrived_ms);
  }
  long hang_attempts = 0;  // hanging attempts started while the healthy topic drained
  for (const auto& a : all) {
    if (a.topic == "hang" && a.arrived_ms <= last) {
      ++hang_attempts;
    }
  }
  Figures f = figures(list);
  report("drain: healthy topic beside a hanging one", f.jobs, f.rate, f.p50, f.p99, f.max,
         join("span " + std::to_string(f.span_ms) + " ms; " + std::to_string(hang_attempts) +
                  " hanging attempts started meanwhile",
              note));
}

// Two shards; the jobs land on both by their placement hash. Once STALL_AT
// (default 5%) of them arrived, one shard's redis-server is SIGSTOPped for
// STALL_MS (10 s), then SIGCONTed.
TEST_CASE("drain: one shard of two stalled") {
  const int jobs = env_int("JOBS", 50000);
  const int stall_ms = env_int("STALL_MS", 10000);
  TestRedis second;  // outlives the world's roles
  DeliveryWorld world;
  tune(world);
  world.config().shards.push_back(second.shard());
  std::atomic<long> arrived{0};
  world.callback().set_responder([&](const RecordedRequest&, size_t) {
    ++arrived;
    return dq::test::CallbackAnswer{};
  });
  world.add_topic(world.topic("bench"));
  int64_t due = plan_due(world, jobs);
  add_backlog(world, "bench", "j", jobs, due);
  // Which shard holds which job: where its record is.
  std::map<std::string, size_t> shard_of;
  for (size_t shard = 0; shard < 2; ++shard) {
    for (int i = 0; i < jobs; ++i) {
      const std::string key = "bench:j" + std::to_string(i);
      auto held = world.store().shard(shard).command({"HEXISTS", dq::keys::records_of(key), key});
      REQUIRE(held.is_ok());
      if ((*held)->integer == 1) {
        shard_of[key.substr(6)] = shard;
      }
    }
  }
  REQUIRE(shard_of.size() == static_cast<size_t>(jobs));
  long on_stalled = 0;
  for (const auto& entry : shard_of) {
    on_stalled += entry.second == 1;
  }
  std::string note = start_before(world, due);

  const long stall_at = std::max(1L, static_cast<long>(jobs) * env_int("STALL_AT", 5) / 100);
  int64_t deadline = now_ms() + 60000;
  while (arrived.load() < stall_at && now_ms() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
  REQUIRE(::kill(second.pid(), SIGSTOP) == 0);
  int64_t stopped_ms = now_ms();
  std::this_thread::sleep_for(std::chrono::milliseconds(stall_ms));
  REQUIRE(::kill(second.pid(), SIGCONT) == 0);
  int64_t continued_ms = now_ms();
  REQUIRE(world.callback().wait_for(jobs, 120000));
  // Duplicates come, if at all, after a lease (2.5 s) ran out: wait longer.
  std::this_thread::sleep_for(std::chrono::milliseconds(4000));

  auto all = arrivals(world.callback().requests());
  std::map<std::string, int> times;
  std::vector<const Arrival*> healthy, stalled;
  long stalled_after_cont = 0, healthy_during_stall = 0;
  for (const auto& a : all) {
    if (++times[a.id] > 1) {
      continue;
    }
    if (shard_of.at(a.id) == 1) {
      stalled.push_back(&a);
      if (a.arrived_ms >= continued_ms) {
        ++stalled_after_cont;
      }
    } else {
      healthy.push_back(&a);
      if (a.arrived_ms >= stopped_ms && a.arrived_ms < continued_ms) {
        ++healthy_during_stall;
      }
    }
  }
  long duplicates = 0;
  for (const auto& entry : times) {
    duplicates += entry.second - 1;
  }
  Figures h = figures(healthy);
  Figures s = figures(stalled);
  report("drain: one shard of two stalled, healthy shard", h.jobs, h.rate, h.p50, h.p99, h.max,
         join("span " + std::to_string(h.span_ms) + " ms; " + std::to_string(healthy_during_stall) +
                  " arrived during the " + std::to_string(stall_ms) + " ms stall",
              note));
  report("drain: one shard of two stalled, stalled shard", s.jobs, s.rate, s.p50, s.p99, s.max,
         std::to_string(stalled_after_cont) + " of " + std::to_string(on_stalled) +
             " arrived after SIGCONT; duplicates " + std::to_string(duplicates));
  CHECK(duplicates == 0);
}

TEST_CASE("lateness at a steady rate") {
  const int rate = env_int("RATE", 1000);
  const int seconds = env_int("SECONDS", 10);
  DeliveryWorld world;
  world.config().log_level = "warn";
  if (std::getenv("NO_AOF")) {
    world.redis().command({"CONFIG", "SET", "appendonly", "no"});
  }
  world.add_topic(world.topic("steady"));
  world.start_timer();
  world.start_consumer(0);
  world.start_consumer(1);
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  const int total = rate * seconds;
  int64_t start = now_ms();
  for (int i = 0; i < total; ++i) {
    int64_t slot = start + static_cast<int64_t>(i) * 1000 / rate;
    int64_t wait = slot - now_ms();
    if (wait > 0) {
      std::this_thread::sleep_for(std::chrono::milliseconds(wait));
    }
    world.add_job("steady", "s" + std::to_string(i), now_ms() + 1000);
  }
  REQUIRE(world.callback().wait_for(total, 30000));
  std::vector<int64_t> lateness;
  std::vector<int64_t> worst_per_second(seconds + 2, 0);
  for (const auto& request : world.callback().requests()) {
    int64_t due = dq::Json::parse(request.body)["due_at_ms"].get<int64_t>();
    lateness.push_back(request.arrived_ms - due);
    size_t second =
        std::min<size_t>(worst_per_second.size() - 1, std::max<int64_t>(0, due - start) / 1000);
    worst_per_second[second] = std::max(worst_per_second[second], request.arrived_ms - due);
  }
  if (std::getenv("VERBOSE")) {
    for (size_t i = 0; i < worst_per_second.size(); ++i) {
      std::printf("  due in second %zu: worst lateness %lld ms\n", i,
                  static_cast<long long>(worst_per_second[i]));
    }
  }
  std::sort(lateness.begin(), lateness.end());
  auto pct = [&](double p) { return lateness[static_cast<size_t>(p * (lateness.size() - 1))]; };
  report("lateness: " + std::to_string(rate) + " jobs/s for " + std::to_string(seconds) +
             " s, due 1 s after add",
         total, rate, static_cast<long>(pct(0.5)), static_cast<long>(pct(0.99)),
         static_cast<long>(lateness.back()), "jobs/s = the offered rate");
}
