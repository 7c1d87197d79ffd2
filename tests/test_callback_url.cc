// The callback URL rules (common/registry/callback_url.h): the checks on a URL as
// written, on a resolved address, and end to end in a real consumer, where a
// host name that resolves to a forbidden address is refused at connect time.
#include <arpa/inet.h>
#include <doctest/doctest.h>

#include <chrono>
#include <fstream>
#include <iterator>
#include <string>
#include <thread>

#include "common/registry/callback_url.h"
#include "tests/delivery_world.h"

using dq::CallbackPolicy;
using dq::Code;
using dq::now_ms;
using dq::test::DeliveryWorld;

namespace {

void sleep_ms(int ms) { std::this_thread::sleep_for(std::chrono::milliseconds(ms)); }

dq::IpAddress ip(const std::string& text) {
  dq::IpAddress address;
  if (text.find(':') != std::string::npos) {
    address.family = AF_INET6;
    REQUIRE(inet_pton(AF_INET6, text.c_str(), address.bytes) == 1);
  } else {
    address.family = AF_INET;
    REQUIRE(inet_pton(AF_INET, text.c_str(), address.bytes) == 1);
  }
  return address;
}

// A config like a small deployment: one shard, the default listeners.
dq::Config sample_config() {
  dq::Config config;
  config.shards = {dq::ShardAddress{"127.0.0.1", 6379, ""}, dq::ShardAddress{"10.1.2.3", 6380, ""}};
  config.server_listen = "0.0.0.0:6780";
  config.legacy_listen = "127.0.0.1:6789";
  config.admin_listen = "127.0.0.1:8088";
  return config;
}

// The job's last_error once an attempt failed ("" if none within 5 s).
std::string last_error_of(DeliveryWorld& world, const std::string& topic, const std::string& id) {
  for (int waited = 0; waited < 5000; waited += 50) {
    auto job = world.store().get(topic, id);
    if (job.is_ok() && !job->last_error.empty()) {
      return job->last_error;
    }
    sleep_ms(50);
  }
  return "";
}

}  // namespace

TEST_CASE("without a config: only http(s), and never a link-local address") {
  for (const char* url : {"http://169.254.169.254/latest/meta-data/", "http://169.254.1.1:8080/x",
                          "https://[fe80::1]/x", "http://[fe80::1%25eth0]:80/", "http://[febf::1]/",
                          "http://[::ffff:169.254.169.254]/", "http://2852039166/",
                          "http://0xa9.0xfe.0xa9.0xfe/", "http://169.254.43518/"}) {
    CAPTURE(url);
    dq::Status status = dq::validate_callback_url(url);
    CHECK(status.code() == Code::kInvalid);
    CHECK(status.message().find("callback_url: ") == 0);
    CHECK(status.message().find("link-local") != std::string::npos);
  }
  for (const char* url : {"ftp://a/x", "gopher://a/", "file:///etc/passwd", "dict://a:11211/"}) {
    CAPTURE(url);
    CHECK(dq::validate_callback_url(url).code() == Code::kInvalid);
  }
  for (const char* url : {"http://169.255.0.1/", "http://[fec0::1]/", "http://10.0.0.1/x",
                          "HTTPS://Example.com/x", "http://127.0.0.1:6379/"}) {
    CAPTURE(url);
    CHECK(dq::validate_callback_url(url).is_ok());
  }
}

TEST_CASE("with the config: no Redis shard, no dq listener, however the host is written") {
  CallbackPolicy policy = CallbackPolicy::from_config(sample_config());
  struct Refused {
    const char* url;
    const char* what;
  };
  for (const Refused& refused : {
           Refused{"http://127.0.0.1:6379/", "Redis shard 127.0.0.1:6379"},
           Refused{"http://localhost:6379/x", "Redis shard 127.0.0.1:6379"},
           Refused{"http://[::1]:6379/x", "Redis shard 127.0.0.1:6379"},
           Refused{"http://127.0.0.2:6379/x", "Redis shard 127.0.0.1:6379"},
           Refused{"http://0x7f000001:6379/x", "Redis shard 127.0.0.1:6379"},
           Refused{"http://[::ffff:127.0.0.1]:6379/", "Redis shard 127.0.0.1:6379"},
           Refused{"http://10.1.2.3:6380/", "Redis shard 10.1.2.3:6380"},
           Refused{"http://127.0.0.1:6780/v1/topics/x/jobs", "API listen address 0.0.0.0:6780"},
           Refused{"http://0.0.0.0:6780/", "API listen address"},
           Refused{"http://LOCALHOST:6789/", "legacy protocol listen address 127.0.0.1:6789"},
           Refused{"http://localhost:8088/login", "admin page listen address 127.0.0.1:8088"},
           Refused{"http://169.254.169.254/", "link-local"},
       }) {
    CAPTURE(refused.url);
    dq::Status status = policy.check_url(refused.url);
    CHECK(status.code() == Code::kInvalid);
    CHECK(status.message().find(refused.what) != std::string::npos);
  }
  for (const char* url :
       {"http://127.0.0.1:8080/cb", "http://localhost:6380/", "http://10.1.2.3:6379/",
        "http://10.1.2.4:6380/", "https://hooks.example.com/x", "http://redis.example.com:6379/"}) {
    CAPTURE(url);
    dq::Status status = policy.check_url(url);
    CHECK_MESSAGE(status.is_ok(), status.message());
  }
}

TEST_CASE("resolved addresses: the check libcurl runs before every connect") {
  CallbackPolicy policy = CallbackPolicy::from_config(sample_config());
  CHECK(policy.check_address(ip("127.0.0.1"), 6379).code() == Code::kInvalid);
  CHECK(policy.check_address(ip("::1"), 6379).code() == Code::kInvalid);
  CHECK(policy.check_address(ip("127.0.0.1"), 6780).code() == Code::kInvalid);
  CHECK(policy.check_address(ip("10.1.2.3"), 6380).code() == Code::kInvalid);
  CHECK(policy.check_address(ip("169.254.169.254"), 80).message().find("link-local") !=
        std::string::npos);
  CHECK(policy.check_address(ip("fe80::abcd"), 443).code() == Code::kInvalid);
  CHECK(policy.check_address(ip("127.0.0.1"), 8080).is_ok());
  CHECK(policy.check_address(ip("10.1.2.3"), 6379).is_ok());
  CHECK(policy.check_address(ip("93.184.216.34"), 6379).is_ok());
  // A default policy (no config) still refuses link-local.
  CHECK(CallbackPolicy().check_address(ip("169.254.169.254"), 80).code() == Code::kInvalid);
  CHECK(CallbackPolicy().check_address(ip("127.0.0.1"), 6379).is_ok());
}

TEST_CASE("callback_allow_hosts: only the hosts listed, case and trailing dot ignored") {
  dq::Config config = sample_config();
  config.callback_allow_hosts = {"hooks.example.com", "10.0.0.7"};
  CallbackPolicy policy = CallbackPolicy::from_config(config);
  CHECK(policy.check_url("https://hooks.example.com/x").is_ok());
  CHECK(policy.check_url("https://HOOKS.Example.com./x").is_ok());
  CHECK(policy.check_url("http://10.0.0.7:9000/x").is_ok());
  dq::Status refused = policy.check_url("https://other.example.com/x");
  CHECK(refused.code() == Code::kInvalid);
  CHECK(refused.message().find("not in [consumer] callback_allow_hosts") != std::string::npos);
  CHECK(policy.check_url("http://evil.hooks.example.com/").code() == Code::kInvalid);
  CHECK(
      CallbackPolicy::from_config(sample_config()).check_url("https://other.example.com/").is_ok());
}

TEST_CASE("a host name that resolves to a Redis port is refused at delivery, clearly") {
  DeliveryWorld world;
  // "localhost" passes the registry's config-free check (a topic written
  // before these rules, or a name DNS points at 127.0.0.1): the consumer
  // must refuse to connect.
  auto sneaky = world.topic("sneaky");
  sneaky.callback_url = "http://localhost:" + std::to_string(world.redis().port()) + "/x";
  sneaky.retry_ms = "60000";
  world.add_topic(sneaky);
  auto honest = world.topic("honest");
  honest.callback_url = "http://localhost:" + std::to_string(world.callback().port()) + "/cb";
  world.add_topic(honest);
  world.start_timer();
  world.start_consumer();
  world.add_job("sneaky", "s1", now_ms());
  world.add_job("honest", "h1", now_ms());

  std::string error = last_error_of(world, "sneaky", "s1");
  MESSAGE("the attempt failed with: ", error);
  CHECK(error.find("callback refused by the URL rules") != std::string::npos);
  CHECK(error.find("Redis shard 127.0.0.1:" + std::to_string(world.redis().port())) !=
        std::string::npos);
  // The same name to a port that is no Redis is delivered.
  REQUIRE(world.callback().wait_for(1, 5000));
  CHECK(world.callback().requests()[0].header("x-dq-id") == "h1");
  // Redis never saw the HTTP request (it logs a "SECURITY ATTACK" for one).
  sleep_ms(200);
  std::ifstream log(world.redis().dir() + "/redis.log");
  std::string text((std::istreambuf_iterator<char>(log)), std::istreambuf_iterator<char>());
  CHECK(text.find("Ready to accept connections") != std::string::npos);  // the right log
  CHECK(text.find("SECURITY ATTACK") == std::string::npos);
}

TEST_CASE("callback_allow_hosts at delivery: a topic on another host fails, a listed one goes") {
  DeliveryWorld world;
  world.config().callback_allow_hosts = {"localhost"};
  auto listed = world.topic("listed");
  listed.callback_url = "http://localhost:" + std::to_string(world.callback().port()) + "/cb";
  world.add_topic(listed);
  auto other = world.topic("other");  // http://127.0.0.1:PORT/callback: same server, not listed
  other.retry_ms = "60000";
  world.add_topic(other);
  world.start_timer();
  world.start_consumer();
  world.add_job("other", "o1", now_ms());
  world.add_job("listed", "l1", now_ms());

  std::string error = last_error_of(world, "other", "o1");
  MESSAGE("the attempt failed with: ", error);
  CHECK(error.find("not in [consumer] callback_allow_hosts (localhost)") != std::string::npos);
  REQUIRE(world.callback().wait_for(1, 5000));
  sleep_ms(300);
  auto requests = world.callback().requests();
  REQUIRE(requests.size() == 1);
  CHECK(requests[0].header("x-dq-id") == "l1");
}
