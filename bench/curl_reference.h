// The libcurl reference for delivery figures: plain libcurl multi POSTs of
// a callback-sized body straight to a receiver, `parallel` in flight on
// keep-alive connections, no dq in between, the loop a lean libcurl user
// writes (curl_multi_perform + curl_multi_poll). What one POST costs here is
// a floor for a delivery, which is such a POST plus dq's own work.
#pragma once

#include <curl/curl.h>
#include <sys/resource.h>

#include <algorithm>
#include <chrono>
#include <string>
#include <vector>

namespace dq::bench {

struct CurlPostCost {
  double rate = 0;             // POSTs per second, wall clock
  double cpu_us_per_post = 0;  // this process's user + system CPU per POST
};

inline double process_cpu_us() {
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  return (usage.ru_utime.tv_sec + usage.ru_stime.tv_sec) * 1e6 + usage.ru_utime.tv_usec +
         usage.ru_stime.tv_usec;
}

inline size_t discard_answer(char* /*data*/, size_t size, size_t count, void* /*user*/) {
  return size * count;
}

inline CurlPostCost curl_post_cost(const std::string& url, int count, int parallel) {
  const std::string body =
      R"({"topic":"bench","id":"j0","body":{"n":1},"attempt":1,"due_at_ms":0,"created_at_ms":0})";
  CURLM* multi = curl_multi_init();
  curl_multi_setopt(multi, CURLMOPT_MAX_HOST_CONNECTIONS, static_cast<long>(parallel));
  curl_multi_setopt(multi, CURLMOPT_MAXCONNECTS, static_cast<long>(parallel));
  curl_slist* headers = curl_slist_append(nullptr, "Content-Type: application/json");
  headers = curl_slist_append(headers, "Expect:");
  std::vector<CURL*> handles;
  int started = 0;
  int done = 0;
  auto start_one = [&](CURL* easy) {
    curl_easy_setopt(easy, CURLOPT_URL, url.c_str());
    curl_easy_setopt(easy, CURLOPT_POSTFIELDS, body.c_str());
    curl_easy_setopt(easy, CURLOPT_HTTPHEADER, headers);
    curl_easy_setopt(easy, CURLOPT_WRITEFUNCTION, &discard_answer);
    curl_multi_add_handle(multi, easy);
    ++started;
  };
  auto begin = std::chrono::steady_clock::now();
  double cpu_begin = process_cpu_us();
  for (int i = 0; i < parallel && started < count; ++i) {
    handles.push_back(curl_easy_init());
    start_one(handles.back());
  }
  while (done < count) {
    int running = 0;
    curl_multi_perform(multi, &running);
    int queued = 0;
    while (CURLMsg* message = curl_multi_info_read(multi, &queued)) {
      if (message->msg != CURLMSG_DONE) {
        continue;
      }
      CURL* easy = message->easy_handle;
      curl_multi_remove_handle(multi, easy);
      ++done;
      if (started < count) {
        start_one(easy);
      }
    }
    if (done < count) {
      curl_multi_poll(multi, nullptr, 0, 100, nullptr);
    }
  }
  CurlPostCost cost;
  double cpu_us = process_cpu_us() - cpu_begin;
  double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - begin).count();
  cost.rate = count / std::max(seconds, 1e-3);
  cost.cpu_us_per_post = cpu_us / std::max(count, 1);
  for (CURL* easy : handles) {
    curl_easy_cleanup(easy);
  }
  curl_slist_free_all(headers);
  curl_multi_cleanup(multi);
  return cost;
}

}  // namespace dq::bench
