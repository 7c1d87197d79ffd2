// What signing costs per delivery: builds the callback request of one job
// (consumer/callback_request.h) N times, unsigned and signed (HMAC, HMAC
// during a rotation, HMAC + Ed25519), for bodies of 64 B, 4 KiB and 64 KiB,
// and prints ns per build: the best of 5 rounds (the machine is shared; the
// best round is the least disturbed). Run by hand:
//   build/sign_bench [iterations]     (docs/BENCHMARKS.md, "Signing a callback")
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "common/registry/signing_keys.h"
#include "consumer/callback_request.h"

namespace {

double ns_per_build(const dq::Topic& topic, const dq::Job& job, int iterations) {
  dq::CallbackRequest request;
  double best = 1e18;
  for (int round = 0; round < 5; ++round) {
    auto start = std::chrono::steady_clock::now();
    for (int i = 0; i < iterations; ++i) {
      dq::build_callback_request(topic, job, &request);
    }
    std::chrono::duration<double, std::nano> took = std::chrono::steady_clock::now() - start;
    best = std::min(best, took.count() / iterations);
  }
  return best;
}

}  // namespace

int main(int argc, char** argv) {
  int iterations = argc > 1 ? std::atoi(argv[1]) : 20000;
  int64_t now = 1700000000000;
  dq::Topic plain;
  plain.name = "bench";
  plain.callback_url = "http://127.0.0.1:8080/callback";
  dq::Topic hmac = plain;
  dq::rotate_signing_key(&hmac.signing_keys, *dq::make_hmac_key("generate", now), now, 0);
  dq::Topic rotating = hmac;
  dq::rotate_signing_key(&rotating.signing_keys, *dq::make_hmac_key("generate", now), now,
                         int64_t{1} << 50);  // both keys live for the whole run
  dq::Topic both = hmac;
  dq::rotate_signing_key(&both.signing_keys, dq::make_ed25519_key(now), now, 0);

  printf("| body | unsigned | HMAC (v1) | HMAC, rotating (2 x v1) | HMAC + Ed25519 (v1 + v1a) |\n");
  printf("|---:|---:|---:|---:|---:|\n");
  for (size_t size : {size_t{64}, size_t{4096}, size_t{65536}}) {
    dq::Job job;
    job.topic = "bench";
    job.id = "order-000042";
    job.incarnation = "123456";
    job.attempts = 1;
    job.due_at_ms = job.created_at_ms = now;
    job.body = "{\"pad\":\"" + std::string(size - 10, 'x') + "\"}";
    double base = ns_per_build(plain, job, iterations);
    double v1 = ns_per_build(hmac, job, iterations);
    double v1x2 = ns_per_build(rotating, job, iterations);
    double v1a = ns_per_build(both, job, iterations);
    auto cell = [base](double ns) {
      static char text[64];
      snprintf(text, sizeof(text), "%.0f ns (+%.0f)", ns, ns - base);
      return std::string(text);
    };
    printf("| %zu B | %.0f ns | %s | %s | %s |\n", job.body.size(), base, cell(v1).c_str(),
           cell(v1x2).c_str(), cell(v1a).c_str());
  }
  return 0;
}
