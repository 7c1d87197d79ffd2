// Moving from the PHP delay queue, pending jobs and topics: a Redis holding jobs exactly as the PHP
// delay queue stores them (delayed in dq_bucket_N, ready in
// dq_{1,2,3}ready_queue, bodies in dq_job_info; three topics) and a
// mysqldump of dq_topic are imported by `dqctl import php-dq`; every job is
// delivered once at its original due time, with the fields its PHP endpoint
// read; --dry-run and a second import add nothing; --move empties the old
// Redis and loses nothing.
#include <doctest/doctest.h>

#include <ctime>
#include <fstream>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "common/core/clock.h"
#include "common/core/json.h"
#include "tests/support/callback_server.h"
#include "tests/support/e2e.h"
#include "tests/support/http_client.h"
#include "tests/support/redis_server.h"
#include "tests/support/run_program.h"

using dq::Json;
using dq::test::CallbackAnswer;
using dq::test::CallbackServer;
using dq::test::DqdOptions;
using dq::test::DqdProcess;
using dq::test::RecordedRequest;
using dq::test::TestRedis;

namespace {

// PHP's crc32(): CRC-32 (IEEE), as zlib computes it.
uint32_t php_crc32(const std::string& text) {
  uint32_t crc = 0xFFFFFFFFu;
  for (unsigned char c : text) {
    crc ^= c;
    for (int bit = 0; bit < 8; ++bit) {
      crc = (crc >> 1) ^ (0xEDB88320u & (0u - (crc & 1u)));
    }
  }
  return ~crc;
}

std::string local_text(int64_t seconds) {
  time_t t = static_cast<time_t>(seconds);
  struct tm parts {};
  localtime_r(&t, &parts);
  char text[32];
  strftime(text, sizeof text, "%Y-%m-%d %H:%M:%S", &parts);
  return text;
}

constexpr int kBuckets = 4;  // DqConf::$bucket

struct PhpJobSpec {
  std::string topic;
  std::string id;
  int64_t due_s;  // 0: in a ready queue
  int priority;   // the topic's, for the ready queue
};

// Stores a job as DqRedis::handle() did (and, for a ready one, as the timer
// moved it): the body gets notify_time and dq_set_time; the tid goes to the
// topic's bucket or to the ready queue of its priority.
void store_like_php(TestRedis& redis, const PhpJobSpec& job, int64_t set_s) {
  std::string tid = job.topic + ":" + job.id;
  int64_t notify_s = job.due_s ? job.due_s : set_s;
  Json body = Json::object();
  body["order_id"] = job.id;
  body["amount"] = 12.5;
  body["notify_time"] = local_text(notify_s);
  body["dq_set_time"] = local_text(set_s);
  redis.command({"HSET", "dq_job_info", tid, body.dump()});
  if (job.due_s) {
    std::string bucket = "dq_bucket_" + std::to_string(php_crc32(job.topic) % kBuckets);
    redis.command({"ZADD", bucket, std::to_string(job.due_s), tid});
  } else {
    redis.command({"RPUSH", "dq_" + std::to_string(job.priority) + "ready_queue", tid});
  }
}

const char* kDump = R"SQL(-- MySQL dump 10.13
DROP TABLE IF EXISTS `dq_topic`;
CREATE TABLE `dq_topic` (
  `id` int(11) NOT NULL AUTO_INCREMENT,
  `t_name` varchar(100) NOT NULL DEFAULT '',
  `delay` int(11) NOT NULL DEFAULT '0',
  `callback` varchar(255) NOT NULL DEFAULT '',
  `timeout` int(11) NOT NULL DEFAULT '3000',
  `email` varchar(255) NOT NULL DEFAULT '',
  `topic` varchar(64) NOT NULL DEFAULT '',
  `createor` varchar(32) NOT NULL DEFAULT '',
  `status` tinyint(4) NOT NULL DEFAULT '1',
  `method` varchar(8) NOT NULL DEFAULT 'GET',
  `priority` tinyint(4) NOT NULL DEFAULT '2',
  PRIMARY KEY (`id`)
) ENGINE=InnoDB AUTO_INCREMENT=4 DEFAULT CHARSET=utf8;

LOCK TABLES `dq_topic` WRITE;
INSERT INTO `dq_topic` VALUES (1,'订单\'超时\'关闭',1800,'@URL@/order','3000','ops@example.com;dev@example.com','order_close','zhang',1,'post',1),(2,'优惠券过期',0,'@URL@/coupon.php?src=dq',5,'','coupon_expire','li',1,'',2),(3,'会员提醒',60,'@URL@/member',3000,NULL,'member_remind','wang',1,'POST',3);
UNLOCK TABLES;
DROP TABLE IF EXISTS `dq_redis`;
INSERT INTO `dq_redis` VALUES (1,'127.0.0.1:6379:secret',1);
)SQL";

struct Env {
  TestRedis old_redis;  // the PHP queue's
  TestRedis redis;      // dq's
  CallbackServer callback;
  std::unique_ptr<DqdProcess> dqd;
  std::string dump_path;
  Env() {
    DqdOptions options;
    options.shards = {redis.address()};
    options.timers = 1;
    options.consumers = 1;
    dqd = std::make_unique<DqdProcess>(options);
    dqd->start();
    std::string dump = kDump;
    std::string url = callback.url("");
    for (size_t at; (at = dump.find("@URL@")) != std::string::npos;) {
      dump.replace(at, 5, url);
    }
    dump_path = dqd->dir() + "/dq_topic.sql";
    std::ofstream(dump_path) << dump;
  }
  dq::test::RunResult dqctl(std::vector<std::string> args) {
    args.insert(args.begin(),
                {"-c", dqd->config_path(), "-s", "127.0.0.1:" + std::to_string(dqd->http_port())});
    return dq::test::run_dqctl(args, dqd->dir());
  }
};

Env& env() {
  static Env instance;
  return instance;
}

std::string old_redis_arg() { return env().old_redis.address(); }

std::map<std::string, std::vector<RecordedRequest>> deliveries() {
  std::map<std::string, std::vector<RecordedRequest>> by_job;
  for (const auto& request : env().callback.requests()) {
    by_job[request.header("x-dq-topic") + "/" + request.header("x-dq-id")].push_back(request);
  }
  return by_job;
}

std::string field(const RecordedRequest& request, const std::string& name) {
  return request.method == "POST" ? request.form_field(name) : request.param(name);
}

}  // namespace

TEST_CASE("topics and pending jobs come over once, each delivered at its original due time") {
  Env& e = env();
  // Slow answers keep the ready jobs in flight (held by dq) while the import runs twice.
  e.callback.set_responder([](const RecordedRequest&, size_t) {
    CallbackAnswer answer;
    answer.delay_ms = 1500;
    return answer;
  });
  int64_t now_s = dq::now_ms() / 1000;
  std::vector<PhpJobSpec> jobs = {
      {"order_close", "1001", now_s + 4, 1},  {"order_close", "1002", now_s + 5, 1},
      {"coupon_expire", "c-1", now_s + 4, 2}, {"member_remind", "m 1", now_s + 5, 3},
      {"order_close", "1000", 0, 1},          {"coupon_expire", "c-0", 0, 2},
      {"member_remind", "m-0", 0, 3},
  };
  for (const auto& job : jobs) {
    store_like_php(e.old_redis, job, now_s - 60);
  }
  // A tid whose body a PHP consumer already took: skipped.
  e.old_redis.command({"RPUSH", "dq_2ready_queue", "coupon_expire:gone"});
  std::string before = e.old_redis.dump_all();

  auto dry = e.dqctl(
      {"import", "php-dq", "--topics", e.dump_path, "--redis", old_redis_arg(), "--dry-run"});
  CHECK_MESSAGE(dry.exit_code == 0, dry.err);
  CHECK(dq::test::contains(dry.out, "would add topic order_close (订单'超时'关闭) POST"));
  CHECK(
      dq::test::contains(dry.out, "would add job member_remind/m 1 due " + local_text(now_s + 5)));
  CHECK(dq::test::contains(dry.out, "would add job order_close/1000 due now"));
  CHECK_FALSE(e.dqd->registry().get_topic("order_close").is_ok());

  auto first = e.dqctl({"import", "php-dq", "--topics", e.dump_path, "--redis", old_redis_arg()});
  CHECK_MESSAGE(first.exit_code == 0, first.out << first.err);
  CHECK(dq::test::contains(first.out, "topics: 3 added, 0 existing, 0 failed"));
  CHECK(dq::test::contains(first.out, "jobs: 7 added, 0 existing, 0 failed, 1 skipped, 0 removed"));
  auto second = e.dqctl({"import", "php-dq", "--topics", e.dump_path, "--redis", old_redis_arg()});
  CHECK_MESSAGE(second.exit_code == 0, second.out << second.err);
  CHECK(dq::test::contains(second.out, "topics: 0 added, 3 existing, 0 failed"));
  CHECK(dq::test::contains(second.out, "jobs: 0 added, 7 existing, 0 failed"));
  CHECK(e.old_redis.dump_all() == before);  // the source is only read

  auto order = e.dqd->registry().get_topic("order_close");
  REQUIRE(order.is_ok());
  CHECK(order->callback_format == "form");
  CHECK(order->method == "POST");
  CHECK(order->priority == 1);
  CHECK(order->default_delay_s == 1800);
  CHECK(order->timeout_ms == 3000);
  CHECK(order->alert_emails == "ops@example.com,dev@example.com");
  CHECK(order->creator == "zhang");
  auto coupon = e.dqd->registry().get_topic("coupon_expire");
  REQUIRE(coupon.is_ok());
  CHECK(coupon->method == "GET");
  CHECK(coupon->timeout_ms == 5000);  // 5: seconds

  REQUIRE(dq::test::wait_until(9000, [&] { return deliveries().size() >= jobs.size(); }));
  dq::test::sleep_ms(600);
  auto delivered = deliveries();
  CHECK(delivered.size() == jobs.size());
  for (const auto& job : jobs) {
    CAPTURE(job.id);
    auto& requests = delivered[job.topic + "/" + job.id];
    REQUIRE(requests.size() == 1);
    const RecordedRequest& request = requests[0];
    CHECK(field(request, "order_id") == job.id);
    CHECK(field(request, "amount") == "12.5");
    CHECK(field(request, "dq_set_time") == local_text(now_s - 60));
    if (job.due_s) {
      CHECK(request.arrived_ms >= job.due_s * 1000);
      CHECK(request.arrived_ms < job.due_s * 1000 + 1000);
      CHECK(field(request, "notify_time") == local_text(job.due_s));
    }
  }
  CHECK(delivered["coupon_expire/c-1"][0].param("src") == "dq");
}

TEST_CASE("--move empties the old Redis once dq holds each job, and loses none") {
  Env& e = env();
  e.callback.set_responder([](const RecordedRequest&, size_t) { return CallbackAnswer{}; });
  e.old_redis.command({"FLUSHALL"});
  int64_t now_s = dq::now_ms() / 1000;
  std::vector<PhpJobSpec> jobs = {{"order_close", "2001", now_s + 3600, 1},
                                  {"coupon_expire", "c-2", now_s + 7200, 2},
                                  {"member_remind", "m-2", now_s + 600, 3},
                                  {"order_close", "2000", 0, 1}};
  for (const auto& job : jobs) {
    store_like_php(e.old_redis, job, now_s);
  }
  size_t delivered_before = e.callback.count();

  auto moved = e.dqctl({"import", "php-dq", "--redis", old_redis_arg(), "--move"});
  CHECK_MESSAGE(moved.exit_code == 0, moved.out << moved.err);
  CHECK(dq::test::contains(moved.out, "jobs: 4 added, 0 existing, 0 failed, 0 skipped, 4 removed"));
  CHECK(e.old_redis.dump_all().empty());

  dq::test::HttpClient http;
  for (const auto& job : jobs) {
    if (!job.due_s) {
      continue;
    }
    CAPTURE(job.id);
    auto got = http.get(e.dqd->jobs_url(job.topic) + "/" + job.id);
    REQUIRE(got.status == 200);
    CHECK(got.json()["due_at_ms"] == job.due_s * 1000);
  }
  REQUIRE(e.callback.wait_for(delivered_before + 1, 5000));
  CHECK(deliveries()["order_close/2000"].size() == 1);
}
