// The Python client of README.md (and docs/client.md, which shows the same
// code) run as written against a real dqd: what the README says it does is
// what it does, the batch with a bad id included.
#include <doctest/doctest.h>

#include <string>

#include "common/core/json.h"
#include "tests/support/dqd_process.h"
#include "tests/support/e2e.h"
#include "tests/support/http_client.h"
#include "tests/support/redis_server.h"
#include "tests/support/run_program.h"

using dq::Json;
using dq::test::contains;
using dq::test::DqdProcess;
using dq::test::TestRedis;

namespace {

// The ```python block that starts with the client's docstring.
std::string python_client_of(const std::string& markdown_file) {
  std::string text = dq::test::read_text_file(std::string(DQ_SOURCE_DIR) + "/" + markdown_file);
  size_t start = text.find("```python\n\"\"\"A small dq client");
  REQUIRE(start != std::string::npos);
  start += 10;
  size_t end = text.find("\n```", start);
  REQUIRE(end != std::string::npos);
  return text.substr(start, end - start + 1);
}

}  // namespace

TEST_CASE("the README's Python client does what the README says, against a real dqd") {
  TestRedis redis;
  dq::test::DqdOptions options;
  options.shards = {redis.address()};
  DqdProcess dqd(options);
  dqd.add_topic("orders");
  dqd.start();
  for (const char* file : {"README.md", "docs/client.md"}) {
    CAPTURE(file);
    std::string script = python_client_of(file);
    const std::string servers = "[\"127.0.0.1:6780\", \"127.0.0.1:6781\"]";
    size_t at = script.find(servers);
    REQUIRE(at != std::string::npos);
    script.replace(at, servers.size(), "[\"127.0.0.1:" + std::to_string(dqd.http_port()) + "\"]");
    std::string path = dqd.dir() + "/client.py";
    {
      FILE* out = std::fopen(path.c_str(), "w");
      REQUIRE(out != nullptr);
      std::fwrite(script.data(), 1, script.size(), out);
      std::fclose(out);
    }
    auto ran = dq::test::run_program({"/usr/bin/python3", path}, dqd.dir());
    CAPTURE(ran.out);
    CAPTURE(ran.err);
    REQUIRE(ran.exit_code == 0);
    // The batch line: order-43 added, the id with a tab refused, saying why.
    CHECK(contains(ran.out, "'id': 'order-43'"));
    CHECK(contains(ran.out, "'status': 201"));
    CHECK(contains(ran.out, "'status': 400"));
    CHECK(contains(ran.out, "is not valid: an id is 1-256 bytes of UTF-8 text without control"));
    CHECK(contains(ran.out, "not there any more: 404"));
    // Stored: order-43 only (order-42 was deleted).
    CHECK(dq::test::HttpClient().get(dqd.jobs_url("orders") + "/order-43").status == 200);
    CHECK(dq::test::HttpClient().get(dqd.jobs_url("orders") + "/bad%09id").status == 400);
    REQUIRE(dq::test::HttpClient().request("DELETE", dqd.jobs_url("orders") + "/order-43").status ==
            204);
  }
  // As the README says: "!", spaces and "/" are fine in an id.
  auto added = dq::test::HttpClient().post(dqd.jobs_url("orders"),
                                           Json{{"id", "bad id!/x"}, {"body", 2}}.dump());
  CHECK(added.status == 201);
  CHECK(dq::test::HttpClient().get(dqd.jobs_url("orders") + "/bad%20id%21%2Fx").status == 200);
}
