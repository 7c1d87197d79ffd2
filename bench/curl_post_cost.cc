// curl_post_cost URL [POSTS] [PARALLEL]: the libcurl reference of a delivery
// (bench/curl_reference.h) against any receiver, e.g. the nginx bench/run
// drains into. Prints "rate=<POSTs/s> cpu_us_per_post=<µs>".
#include <cstdio>
#include <cstdlib>
#include <string>

#include "bench/curl_reference.h"

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: curl_post_cost URL [POSTS=40000] [PARALLEL=128]\n");
    return 2;
  }
  int posts = argc > 2 ? std::atoi(argv[2]) : 40000;
  int parallel = argc > 3 ? std::atoi(argv[3]) : 128;
  curl_global_init(CURL_GLOBAL_DEFAULT);
  dq::bench::CurlPostCost cost = dq::bench::curl_post_cost(argv[1], posts, parallel);
  std::printf("rate=%.0f cpu_us_per_post=%.1f\n", cost.rate, cost.cpu_us_per_post);
  curl_global_cleanup();
  return 0;
}
