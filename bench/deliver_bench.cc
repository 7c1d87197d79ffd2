// Delivery benchmark (not a test): real redis-server, real HTTP callback that
// answers 200 at once, timer and consumer roles in their own processes.
//   throughput: N jobs already due, then the roles start; jobs delivered per
//               second between the first and the last callback.
//   lateness:   jobs added at a steady rate, each due 1 s later; p50/p99/max
//               of (callback arrival - due time).
// Build and run with bench/deliver_bench.sh (see bench/README.md).
#define DOCTEST_CONFIG_IMPLEMENT_WITH_MAIN
#include <doctest/doctest.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <thread>
#include <vector>

#include <curl/curl.h>

#include "common/json.h"
#include "tests/delivery_world.h"

using dq::now_ms;
using dq::test::DeliveryWorld;

namespace {

int env_int(const char* name, int fallback) {
  const char* value = std::getenv(name);
  return value ? std::atoi(value) : fallback;
}

size_t discard(char* /*data*/, size_t size, size_t count, void* /*user*/) { return size * count; }

// The reference for the throughput figure, measured in the same run: plain
// libcurl multi POSTs of a callback-sized body straight to the same callback
// server, `parallel` in flight, no dq in between. dq's rate divided by this is
// the share of the raw HTTP rate that the queue keeps.
double raw_post_rate(const std::string& url, int count, int parallel) {
  const std::string body =
      R"({"topic":"bench","id":"j0","body":{"n":1},"attempt":1,"due_at_ms":0,"created_at_ms":0})";
  CURLM* multi = curl_multi_init();
  curl_slist* headers = curl_slist_append(nullptr, "Content-Type: application/json");
  headers = curl_slist_append(headers, "Expect:");
  std::vector<CURL*> handles;
  int started = 0;
  int done = 0;
  auto start_one = [&](CURL* easy) {
    curl_easy_setopt(easy, CURLOPT_URL, url.c_str());
    curl_easy_setopt(easy, CURLOPT_POSTFIELDS, body.c_str());
    curl_easy_setopt(easy, CURLOPT_HTTPHEADER, headers);
    curl_easy_setopt(easy, CURLOPT_WRITEFUNCTION, &discard);
    curl_multi_add_handle(multi, easy);
    ++started;
  };
  int64_t begin = now_ms();
  for (int i = 0; i < parallel && started < count; ++i) {
    handles.push_back(curl_easy_init());
    start_one(handles.back());
  }
  while (done < count) {
    int running = 0;
    curl_multi_perform(multi, &running);
    int queued = 0;
    while (CURLMsg* message = curl_multi_info_read(multi, &queued)) {
      if (message->msg != CURLMSG_DONE) continue;
      CURL* easy = message->easy_handle;
      curl_multi_remove_handle(multi, easy);
      ++done;
      if (started < count) start_one(easy);
    }
    if (done < count) curl_multi_poll(multi, nullptr, 0, 100, nullptr);
  }
  double rate = count * 1000.0 / std::max<int64_t>(1, now_ms() - begin);
  for (CURL* easy : handles) curl_easy_cleanup(easy);
  curl_slist_free_all(headers);
  curl_multi_cleanup(multi);
  return rate;
}

}  // namespace

TEST_CASE("throughput into a fast local callback") {
  const int jobs = env_int("JOBS", 50000);
  const int consumers = env_int("CONSUMERS", 2);
  DeliveryWorld world;
  world.config().consumer_concurrency = env_int("CONCURRENCY", 64);
  world.config().log_level = "warn";  // notify lines would measure the disk, not dq
  world.add_topic(world.topic("bench"));
  int64_t due = now_ms();
  for (int i = 0; i < jobs; ++i) world.add_job("bench", "j" + std::to_string(i), due, "{\"n\":1}");
  world.start_timer();
  for (int i = 0; i < consumers; ++i) world.start_consumer(i);
  REQUIRE(world.callback().wait_for(jobs, 120000));
  auto requests = world.callback().requests();
  int64_t first = requests.front().arrived_ms;
  int64_t last = requests.back().arrived_ms;
  double rate = jobs * 1000.0 / std::max<int64_t>(1, last - first);
  std::printf("throughput: %d jobs, %d consumers x %d in flight: %.0f jobs/s (%lld ms)\n", jobs,
              consumers, world.config().consumer_concurrency, rate,
              static_cast<long long>(last - first));
  int parallel = consumers * world.config().consumer_concurrency;
  double reference = raw_post_rate(world.callback().url(), jobs, parallel);
  std::printf("reference: plain libcurl POSTs to the same callback, %d in flight: %.0f/s\n", parallel,
              reference);
  std::printf("ratio: dq delivers at %.0f%% of the raw HTTP rate\n", 100.0 * rate / reference);
}

TEST_CASE("lateness at a steady rate") {
  const int rate = env_int("RATE", 1000);
  const int seconds = env_int("SECONDS", 10);
  DeliveryWorld world;
  world.config().log_level = "warn";
  if (std::getenv("NO_AOF")) world.redis().command({"CONFIG", "SET", "appendonly", "no"});
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
    if (wait > 0) std::this_thread::sleep_for(std::chrono::milliseconds(wait));
    world.add_job("steady", "s" + std::to_string(i), now_ms() + 1000);
  }
  REQUIRE(world.callback().wait_for(total, 30000));
  std::vector<int64_t> lateness;
  std::vector<int64_t> worst_per_second(seconds + 2, 0);
  for (const auto& request : world.callback().requests()) {
    int64_t due = dq::Json::parse(request.body)["due_at_ms"].get<int64_t>();
    lateness.push_back(request.arrived_ms - due);
    size_t second = std::min<size_t>(worst_per_second.size() - 1, std::max<int64_t>(0, due - start) / 1000);
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
  std::printf("lateness: %d jobs at %d/s, delay 1 s: p50 %lld ms, p99 %lld ms, max %lld ms\n",
              total, rate, static_cast<long long>(pct(0.5)), static_cast<long long>(pct(0.99)),
              static_cast<long long>(lateness.back()));
}
