// dq-admin end to end: a real dqd (with its dq-admin child) on a real
// redis-server, spoken to over HTTP with cookies and headers like a browser.
// Sessions, CSRF, the login rate limit, SQL injection and script in data.
#include <curl/curl.h>
#include <doctest/doctest.h>
#include <signal.h>
#include <sys/stat.h>

#include <fstream>
#include <map>
#include <set>

#include "admin/login_limiter.h"
#include "common/core/json.h"
#include "common/registry/admin_users.h"
#include "tests/support/admin_client.h"
#include "tests/support/dqd_process.h"
#include "tests/support/e2e.h"
#include "tests/support/http_client.h"
#include "tests/support/process_tree.h"
#include "tests/support/redis_server.h"
#include "tests/support/run_program.h"

namespace dq::test {
namespace {

constexpr const char* kPassword = "correct horse battery";

// The browser-like client of tests/support/admin_client.h.
using Browser = AdminClient;
using Answer = AdminAnswer;

std::string url_escape(const std::string& text) {
  char* escaped = curl_easy_escape(nullptr, text.c_str(), static_cast<int>(text.size()));
  std::string out = escaped;
  curl_free(escaped);
  return out;
}

// One dqd with the admin page and a first user from [admin] user and
// password_file.
struct AdminWorld {
  TestRedis redis;
  std::unique_ptr<DqdProcess> dqd;

  AdminWorld() {
    DqdOptions options;
    options.shards = {redis.address()};
    options.admin = true;
    options.extra_ini = "[admin]\nuser = admin\npassword_file = admin-password\n";
    dqd = std::make_unique<DqdProcess>(options);
    std::ofstream(dqd->dir() + "/admin-password") << kPassword << "\n";
    dqd->start();
    REQUIRE(wait_until(
        10000, [&] { return http_request("GET", dqd->admin_url() + "/login").status == 200; }));
  }

  Browser browser() { return Browser(dqd->admin_url()); }
  Browser logged_in() {
    Browser b = browser();
    REQUIRE(b.login("admin", kPassword).status == 200);
    return b;
  }
  size_t topic_count() {
    auto topics = dqd->registry().list_topics();
    REQUIRE(topics.is_ok());
    return topics->size();
  }
};

void check_safety_headers(const Answer& answer) {
  CHECK(answer.header("content-security-policy") == "default-src 'self'");
  CHECK(answer.header("x-frame-options") == "DENY");
  CHECK(answer.header("x-content-type-options") == "nosniff");
  CHECK(answer.header("referrer-policy") == "no-referrer");
}

const std::vector<std::string> kPages = {"/",       "/topics", "/jobs",   "/dead",
                                         "/shards", "/alerts", "/nowhere"};
const std::vector<std::pair<std::string, std::string>> kApi = {
    {"GET", "/api/session"},
    {"GET", "/api/dashboard"},
    {"GET", "/api/topics"},
    {"POST", "/api/topics"},
    {"GET", "/api/topics/a"},
    {"PUT", "/api/topics/a"},
    {"DELETE", "/api/topics/a"},
    {"POST", "/api/topics/a/test"},
    {"POST", "/api/topics/a/purge"},
    {"GET", "/api/topics/a/stats"},
    {"GET", "/api/topics/a/schedules"},
    {"GET", "/api/topics/a/jobs?state=ready"},
    {"GET", "/api/topics/a/jobs/j1"},
    {"DELETE", "/api/topics/a/jobs/j1"},
    {"GET", "/api/topics/a/dead"},
    {"DELETE", "/api/topics/a/dead"},
    {"POST", "/api/topics/a/dead/requeue"},
    {"DELETE", "/api/topics/a/dead/j1"},
    {"GET", "/api/shards"},
    {"POST", "/api/shards"},
    {"DELETE", "/api/shards/127.0.0.1:1"},
    {"GET", "/api/alerts"},
    {"PUT", "/api/alerts"},
    {"POST", "/api/alerts/test"},
    {"POST", "/api/logout"},
    {"GET", "/api/nothing"},
};

}  // namespace

TEST_CASE("dq-admin: sessions, CSRF, rate limit, injection and script in data") {
  AdminWorld world;

  SUBCASE("without a session pages redirect to /login and the API answers 401") {
    Browser anonymous = world.browser();
    for (const auto& page : kPages) {
      Answer answer = anonymous.call("GET", page);
      CHECK_MESSAGE(answer.status == 302, page);
      CHECK_MESSAGE(answer.header("location") == "/login", page);
      check_safety_headers(answer);
    }
    for (const auto& route : kApi) {
      std::string what = route.first + " " + route.second;
      Answer answer = anonymous.call(route.first, route.second, "{}");
      CHECK_MESSAGE(answer.status == 401, what);
      CHECK_MESSAGE(answer.json().contains("error"), what);
    }
    // A made-up cookie is no session either.
    Browser forged = world.browser();
    CHECK(forged.call("GET", "/api/session").status == 401);
    Answer login_page = anonymous.call("GET", "/login");
    CHECK(login_page.status == 200);
    check_safety_headers(login_page);

    // With a session the same pages are served, and logout ends it.
    Browser user = world.logged_in();
    CHECK(contains(user.cookie(), "dq_admin="));
    for (const auto& page : {"/", "/topics", "/jobs", "/dead", "/shards", "/alerts"}) {
      Answer answer = user.call("GET", page);
      CHECK_MESSAGE(answer.status == 200, page);
      check_safety_headers(answer);
    }
    Answer session = user.call("GET", "/api/session");
    CHECK(session.status == 200);
    CHECK(session.json()["user"] == "admin");
    CHECK(user.call("POST", "/api/logout").status == 200);
    CHECK(user.call("GET", "/api/session").status == 401);
    CHECK(user.call("GET", "/topics").status == 302);
  }

  SUBCASE("a session survives a respawn of dq-admin") {
    Browser user = world.logged_in();
    auto admins = children_titled(world.dqd->pid(), "dq-admin");
    REQUIRE(admins.size() == 1);
    kill(admins[0], SIGKILL);
    REQUIRE(wait_until(10000, [&] {
      auto now = children_titled(world.dqd->pid(), "dq-admin");
      return now.size() == 1 && now[0] != admins[0] &&
             user.call("GET", "/api/session").status == 200;
    }));
    CHECK(user.call("GET", "/api/session").json()["user"] == "admin");
  }

  SUBCASE("the session cookie is HttpOnly and SameSite=Strict; Secure behind https") {
    Browser user = world.browser();
    Answer answer = user.login("admin", kPassword);
    REQUIRE(answer.status == 200);
    std::string cookie = answer.header("set-cookie");
    CHECK(contains(cookie, "HttpOnly"));
    CHECK(contains(cookie, "SameSite=Strict"));
    CHECK_FALSE(contains(cookie, "Secure"));
  }

  SUBCASE("a POST, PUT or DELETE without the CSRF token is refused and changes nothing") {
    Browser user = world.logged_in();
    std::string topic = Json{{"name", "orders"}, {"callback_url", "http://127.0.0.1:9/cb"}}.dump();
    user.forget_csrf();
    CHECK(user.call("POST", "/api/topics", topic).status == 403);
    CHECK(world.topic_count() == 0);
    user.set_csrf("0000000000000000000000000000000000000000000000000000000000000000");
    CHECK(user.call("POST", "/api/topics", topic).status == 403);
    CHECK(world.topic_count() == 0);

    Browser real = world.logged_in();
    REQUIRE(real.call("POST", "/api/topics", topic).status == 201);
    CHECK(world.topic_count() == 1);
    CHECK(user.call("PUT", "/api/topics/orders", R"({"creator":"mallory"})").status == 403);
    CHECK(world.dqd->registry().get_topic("orders")->creator != "mallory");
    CHECK(user.call("DELETE", "/api/topics/orders").status == 403);
    CHECK(user.call("PUT", "/api/alerts", R"({"smtp_host":"evil.example"})").status == 403);
    CHECK(user.call("POST", "/api/logout").status == 403);
    CHECK(world.topic_count() == 1);
    CHECK(real.call("GET", "/api/alerts").json()["smtp_host"] == "");
    // The token of one session is not the token of another.
    CHECK(real.call("PUT", "/api/topics/orders", R"({"creator":"alice"})").status == 200);
    CHECK(world.dqd->registry().get_topic("orders")->creator == "alice");
  }

  SUBCASE("failed logins are rate limited per user and per address") {
    Browser guesser = world.browser();
    for (int i = 0; i < 5; ++i) {
      CHECK(guesser.login("admin", "wrong password").status == 401);
    }
    // Locked for this user at this address now, even with the right password.
    Answer locked = guesser.login("admin", kPassword);
    CHECK(locked.status == 429);
    CHECK_FALSE(locked.header("retry-after").empty());
    // The real admin, from another address, is not locked out by it.
    Browser real_admin = world.browser();
    real_admin.from_address("127.0.0.2");
    CHECK(real_admin.login("admin", kPassword).status == 200);
    CHECK(real_admin.call("GET", "/api/session").json()["user"] == "admin");
    // Another user from the same address is not locked by it yet.
    REQUIRE(world.dqd->registry().list_topics().is_ok());
    auto users = AdminUsers::open(world.dqd->sqlite_path());
    REQUIRE(users.is_ok());
    REQUIRE((*users)->add("second", kPassword).is_ok());
    CHECK(guesser.login("second", kPassword).status == 200);
    // An address that keeps failing is locked for every name.
    Browser other = world.browser();
    int refused = 0;
    for (int i = 0; i < 25 && refused == 0; ++i) {
      long status = other.login("nobody" + std::to_string(i), "wrong password").status;
      if (status == 429) {
        ++refused;
      }
    }
    CHECK(refused == 1);
  }

  SUBCASE("SQL injection in search and form fields changes nothing") {
    Browser user = world.logged_in();
    REQUIRE(user.call("POST", "/api/topics",
                      Json{{"name", "orders"}, {"callback_url", "http://127.0.0.1:9/cb"}}.dump())
                .status == 201);
    for (const char* evil : {"' OR '1'='1", "x'; DROP TABLE topics; --", "\" OR 1=1 --", "%' --"}) {
      Answer search = user.call("GET", "/api/topics?q=" + url_escape(evil));
      CHECK(search.status == 200);
      CHECK(search.json()["total"] == 0);
      Answer bad_name =
          user.call("POST", "/api/topics",
                    Json{{"name", evil}, {"callback_url", "http://127.0.0.1:9/cb"}}.dump());
      CHECK(bad_name.status == 400);
      CHECK(bad_name.json()["field"] == "name");
      CHECK(user.login(evil, evil).status == 401);
    }
    // Stored as text, byte for byte.
    std::string creator = "x'); DROP TABLE topics; --";
    REQUIRE(user.call("POST", "/api/topics",
                      Json{{"name", "shipments"},
                           {"callback_url", "http://127.0.0.1:9/cb"},
                           {"creator", creator}}
                          .dump())
                .status == 201);
    CHECK(world.topic_count() == 2);
    CHECK(world.dqd->registry().get_topic("shipments")->creator == creator);
    CHECK(world.dqd->registry().get_topic("orders").is_ok());
  }

  SUBCASE("validation messages name the field; nothing is stored") {
    Browser user = world.logged_in();
    Answer url =
        user.call("POST", "/api/topics", Json{{"name", "t1"}, {"callback_url", "ftp://x/"}}.dump());
    CHECK(url.status == 400);
    CHECK(url.json()["field"] == "callback_url");
    Answer number = user.call(
        "POST", "/api/topics",
        Json{{"name", "t1"}, {"callback_url", "http://127.0.0.1:9/"}, {"timeout_ms", "soon"}}
            .dump());
    CHECK(number.status == 400);
    CHECK(number.json()["field"] == "timeout_ms");
    // dq's own Redis is not a callback target (the dqctl rules).
    Answer redis = user.call(
        "POST", "/api/topics",
        Json{{"name", "t1"}, {"callback_url", "http://" + world.redis.address() + "/"}}.dump());
    CHECK(redis.status == 400);
    CHECK(redis.json()["field"] == "callback_url");
    Answer format = user.call(
        "POST", "/api/topics",
        Json{{"name", "t1"}, {"callback_url", "http://127.0.0.1:9/"}, {"callback_format", "xml"}}
            .dump());
    CHECK(format.status == 400);
    CHECK(format.json()["field"] == "callback_format");
    Answer rule = user.call("POST", "/api/topics",
                            Json{{"name", "t1"},
                                 {"callback_url", "http://127.0.0.1:9/"},
                                 {"success_json", "no equals sign"}}
                                .dump());
    CHECK(rule.status == 400);
    CHECK(rule.json()["field"] == "success_json");
    CHECK(world.topic_count() == 0);
  }

  SUBCASE("the PHP queue's settings: form callbacks and a success rule are stored and shown") {
    Browser user = world.logged_in();
    REQUIRE(user.call("POST", "/api/topics",
                      Json{{"name", "legacy"},
                           {"callback_url", "http://127.0.0.1:9/cb"},
                           {"callback_format", "form"},
                           {"success_json", "code=0"}}
                          .dump())
                .status == 201);
    Json shown = user.call("GET", "/api/topics/legacy").json();
    CAPTURE(shown.dump());
    Json topic = shown.contains("topic") ? shown["topic"] : shown;
    CHECK(topic["callback_format"] == "form");
    CHECK(topic["success_json"] == "code=0");
    CHECK(user.call("PUT", "/api/topics/legacy", R"({"callback_format":"json"})").status == 200);
    topic = user.call("GET", "/api/topics/legacy").json();
    if (topic.contains("topic")) {
      topic = topic["topic"];
    }
    CHECK(topic["callback_format"] == "json");
  }

  SUBCASE("caps per topic: stored, shown, and a bad one is a 400 naming it that changes nothing") {
    Browser user = world.logged_in();
    REQUIRE(user.call("POST", "/api/topics",
                      Json{{"name", "capped"},
                           {"callback_url", "http://127.0.0.1:9/cb"},
                           {"max_in_flight", 2},
                           {"max_rate", 50}}
                          .dump())
                .status == 201);
    Json topic = user.call("GET", "/api/topics/capped").json();
    if (topic.contains("topic")) {
      topic = topic["topic"];
    }
    CHECK(topic["max_in_flight"] == 2);
    CHECK(topic["max_rate"] == 50);
    CHECK(topic["max_burst"] == 0);
    Answer burst = user.call("PUT", "/api/topics/capped", R"({"max_rate":0,"max_burst":9})");
    CHECK(burst.status == 400);
    CHECK(burst.json()["field"] == "max_burst");
    Answer negative = user.call("PUT", "/api/topics/capped", R"({"max_in_flight":-1})");
    CHECK(negative.status == 400);
    CHECK(negative.json()["field"] == "max_in_flight");
    topic = user.call("GET", "/api/topics/capped").json();
    if (topic.contains("topic")) {
      topic = topic["topic"];
    }
    CHECK(topic["max_in_flight"] == 2);  // unchanged
    CHECK(topic["max_rate"] == 50);
  }

  SUBCASE("a creator holding a script is returned as data; the page builds no HTML from data") {
    Browser user = world.logged_in();
    std::string script = "<script>alert(1)</script>";
    REQUIRE(user.call("POST", "/api/topics",
                      Json{{"name", "xss"},
                           {"callback_url", "http://127.0.0.1:9/cb"},
                           {"creator", script}}
                          .dump())
                .status == 201);
    Answer listed = user.call("GET", "/api/topics");
    CHECK(listed.header("content-type") == "application/json");
    CHECK(listed.json()["topics"][0]["creator"] == script);
    // The page's script never parses data as HTML, and the pages have no
    // inline script or style attribute (CSP default-src 'self' forbids both).
    Answer js = user.call("GET", "/static/app.js");
    REQUIRE(js.status == 200);
    for (const char* sink :
         {"innerHTML", "outerHTML", "insertAdjacentHTML", "document.write", "eval("}) {
      CHECK_MESSAGE(!contains(js.body, sink), sink);
    }
    for (const char* page : {"/", "/login"}) {
      Answer html = user.call("GET", page);
      CHECK_FALSE(contains(html.body, "style="));
      CHECK_FALSE(contains(html.body, "<script>"));
      CHECK_FALSE(contains(html.body, "onclick="));
    }
  }

  SUBCASE("shards: a shard is added only when it answers, and removed only while empty") {
    Browser user = world.logged_in();
    TestRedis spare;
    Answer bad = user.call("POST", "/api/shards", R"({"address":"nope"})");
    CHECK(bad.status == 400);
    CHECK(bad.json()["field"] == "address");
    CHECK(
        user.call("POST", "/api/shards", Json{{"address", world.redis.address()}}.dump()).status ==
        409);
    // A shard that does not answer would take no job: refused, nothing written.
    CHECK(user.call("POST", "/api/shards", R"({"address":"127.0.0.1:1"})").status == 503);
    CHECK(world.dqd->registry().list_extra_shards()->empty());
    CHECK(user.call("POST", "/api/shards", Json{{"address", spare.address()}}.dump()).status ==
          201);
    Answer listed = user.call("GET", "/api/shards");
    REQUIRE(listed.status == 200);
    REQUIRE(listed.json()["shards"].size() == 2);
    CHECK(listed.json()["shards"][0]["reachable"] == true);
    CHECK(listed.json()["shards"][0]["version"] != "");
    CHECK(listed.json()["shards"][1]["source"] == "registry");
    std::string state = listed.json()["shards"][1]["state"];
    // Joining for its first 3 s, then moving in until the checker moved the
    // jobs whose home it became (none here) and made it active.
    CHECK_MESSAGE((state == "joining" || state == "moving" || state == "active"), state);
    CHECK(listed.json()["shards"][1]["reachable"] == true);
    // One change at a time: no second shard while this one moves in.
    TestRedis another;
    if (state != "active") {
      Answer second = user.call("POST", "/api/shards", Json{{"address", another.address()}}.dump());
      CHECK(second.status == 409);
      CHECK_MESSAGE(
          second.json().value("error", "").find("one change at a time") != std::string::npos,
          second.body);
    }
    CHECK(wait_until(60000, [&] {
      Answer now = user.call("GET", "/api/shards");
      return now.status == 200 && now.json()["shards"][1]["state"] == "active";
    }));
    // A config shard is not removed here; an unknown one is not found; an
    // empty registry shard is removed once drained long enough that no host
    // places jobs on it any more.
    CHECK(user.call("DELETE", "/api/shards/" + world.redis.address()).status == 409);
    CHECK(user.call("DELETE", "/api/shards/127.0.0.1:1").status == 404);
    CHECK(user.call("POST", "/api/shards/127.0.0.1:1/drain").status == 404);
    Answer undrained = user.call("DELETE", "/api/shards/" + spare.address());
    CHECK(undrained.status == 409);
    CHECK_MESSAGE(undrained.json().value("error", "").find("drain it") != std::string::npos,
                  undrained.body);
    CHECK(user.call("POST", "/api/shards/" + spare.address() + "/drain").status == 200);
    int removed = 0;
    CHECK(wait_until(60000, [&] {
      removed = user.call("DELETE", "/api/shards/" + spare.address()).status;
      if (removed == 409) sleep_ms(500);
      return removed != 409;
    }));
    CHECK(removed == 200);
    CHECK(world.dqd->registry().list_extra_shards()->empty());
  }

  SUBCASE("alert settings: a bad value names its field and changes nothing") {
    Browser user = world.logged_in();
    Answer bad = user.call("PUT", "/api/alerts", R"({"smtp_host":"mail.example","smtp_port":"x"})");
    CHECK(bad.status == 400);
    CHECK(bad.json()["field"] == "smtp_port");
    CHECK(user.call("GET", "/api/alerts").json()["smtp_host"] == "");
    Answer saved = user.call(
        "PUT", "/api/alerts",
        R"({"smtp_host":"mail.example","smtp_port":"2525","smtp_password":"s3cret","to":"ops@example.com"})");
    CHECK(saved.status == 200);
    CHECK(saved.json()["smtp_password"] == "***");
    // "***" sent back keeps the stored password.
    CHECK(user.call("PUT", "/api/alerts", R"({"smtp_password":"***"})").status == 200);
    auto stored = world.dqd->registry().alert_settings();
    REQUIRE(stored.is_ok());
    CHECK((*stored)["smtp_password"] == "s3cret");
    CHECK((*stored)["smtp_port"] == "2525");
  }

  SUBCASE("a topic holding jobs is deleted only when confirmed; purge needs the typed name") {
    Browser user = world.logged_in();
    REQUIRE(user.call("POST", "/api/topics",
                      Json{{"name", "orders"},
                           {"callback_url", "http://127.0.0.1:9/cb"},
                           {"default_delay_s", 3600}}
                          .dump())
                .status == 201);
    REQUIRE(wait_until(5000, [&] {
      return http_request("POST", world.dqd->jobs_url("orders"),
                          job_doc("j1", Json{{"a", 1}}, 3600))
                 .status == 201;
    }));
    Answer job = user.call("GET", "/api/topics/orders/jobs/j1");
    CHECK(job.status == 200);
    CHECK(job.json()["state"] == "delayed");
    CHECK(job.json()["body"] == Json{{"a", 1}});
    Answer refused = user.call("DELETE", "/api/topics/orders");
    CHECK(refused.status == 409);
    CHECK(refused.json()["jobs"] == 1);
    CHECK(world.topic_count() == 1);
    CHECK(user.call("POST", "/api/topics/orders/purge", R"({"confirm":"order"})").status == 400);
    CHECK(user.call("GET", "/api/topics/orders/jobs/j1").status == 200);
    Answer purged = user.call("POST", "/api/topics/orders/purge", R"({"confirm":"orders"})");
    CHECK(purged.status == 200);
    CHECK(purged.json()["purged"] == 1);
    CHECK(user.call("GET", "/api/topics/orders/jobs/j1").status == 404);
    CHECK(user.call("DELETE", "/api/topics/orders").status == 200);
    CHECK(world.topic_count() == 0);
  }
}

TEST_CASE("the first user's missing password file is created with a random password") {
  TestRedis redis;
  DqdOptions options;
  options.shards = {redis.address()};
  DqdProcess dqd(options);
  Config config;
  config.admin_user = "admin";
  config.admin_password_file = dqd.dir() + "/var/admin-password";
  auto users = AdminUsers::open(dqd.sqlite_path());
  REQUIRE(users.is_ok());
  auto created = (*users)->ensure_first_user(config);
  REQUIRE(created.is_ok());
  CHECK(*created);
  std::string password = read_text_file(config.admin_password_file);
  REQUIRE(password.size() == 25);  // 24 characters and a line break
  CHECK(*(*users)->verify("admin", password.substr(0, 24)));
  struct stat info {};
  REQUIRE(stat(config.admin_password_file.c_str(), &info) == 0);
  CHECK((info.st_mode & 0777) == 0600);
  // Only when there is no user yet.
  auto again = (*users)->ensure_first_user(config);
  REQUIRE(again.is_ok());
  CHECK_FALSE(*again);
}

TEST_CASE("dqctl admin user add|list|del") {
  TestRedis redis;
  DqdOptions options;
  options.shards = {redis.address()};
  DqdProcess dqd(options);
  const std::string& config = dqd.config_path();
  auto added =
      run_dqctl({"-c", config, "admin", "user", "add", "ops"}, dqd.dir(), "secret password\n");
  CHECK(added.exit_code == 0);
  CHECK(run_dqctl({"-c", config, "admin", "user", "add", "ops"}, dqd.dir(), "secret password\n")
            .exit_code == 1);
  CHECK(run_dqctl({"-c", config, "admin", "user", "add", "short"}, dqd.dir(), "abc\n").exit_code ==
        1);
  std::ofstream(dqd.dir() + "/pw") << "another password\n";
  CHECK(
      run_dqctl({"-c", config, "admin", "user", "add", "dev", "--password-file", dqd.dir() + "/pw"},
                dqd.dir())
          .exit_code == 0);
  auto listed = run_dqctl({"-c", config, "admin", "user", "list"}, dqd.dir());
  CHECK(listed.exit_code == 0);
  CHECK(listed.out == "dev\nops\n");
  auto users = AdminUsers::open(dqd.sqlite_path());
  REQUIRE(users.is_ok());
  CHECK(*(*users)->verify("ops", "secret password"));
  CHECK_FALSE(*(*users)->verify("ops", "secret passwore"));
  CHECK(run_dqctl({"-c", config, "admin", "user", "del", "ops"}, dqd.dir()).exit_code == 0);
  CHECK(run_dqctl({"-c", config, "admin", "user", "del", "ops"}, dqd.dir()).exit_code == 1);
  CHECK(run_dqctl({"-c", config, "admin", "user", "list"}, dqd.dir()).out == "dev\n");
}

TEST_CASE(
    "dq-admin: a signing secret is shown in full once, masked after; bad values name the field") {
  AdminWorld world;
  Browser user = world.logged_in();
  Answer created = user.call("POST", "/api/topics",
                             Json{{"name", "signed"},
                                  {"callback_url", "http://127.0.0.1:9/cb"},
                                  {"signing_secret", "generate"}}
                                 .dump());
  REQUIRE(created.status == 201);
  std::string secret = created.json()["signing_secret"];
  CHECK(secret.rfind("whsec_", 0) == 0);
  CHECK(secret.size() == 6 + 44);  // 32 bytes in base64
  Answer read = user.call("GET", "/api/topics/signed");
  REQUIRE(read.status == 200);
  CHECK(read.json()["signing_secret"] == secret.substr(0, 10) + "...");
  CHECK_FALSE(contains(read.body, secret));
  CHECK_FALSE(contains(user.call("GET", "/api/topics").body, secret));

  // The form sent back as read (as the admin page does) changes no key.
  Json form = read.json();
  form.erase("name");
  Answer saved = user.call("PUT", "/api/topics/signed", form.dump());
  REQUIRE(saved.status == 200);
  CHECK(saved.json()["signing_secret"] == secret.substr(0, 10) + "...");
  CHECK(saved.json()["signing_keys"] == read.json()["signing_keys"]);

  // A rotation answers the new secret once; the old one overlaps.
  Answer rotated = user.call("PUT", "/api/topics/signed",
                             R"({"signing_secret":"generate","signing_overlap_s":60})");
  REQUIRE(rotated.status == 200);
  std::string second = rotated.json()["signing_secret"];
  CHECK(second.rfind("whsec_", 0) == 0);
  CHECK(second != secret);
  Json keys = rotated.json()["signing_keys"];
  REQUIRE(keys.size() == 2);
  CHECK(keys[0]["retires_at_ms"].get<int64_t>() - keys[1]["created_at_ms"].get<int64_t>() == 60000);

  for (const auto& [body, field] : std::vector<std::pair<std::string, std::string>>{
           {R"({"signing_secret":"whsec_abc"})", "signing_secret"},
           {R"({"signing_secret":7})", "signing_secret"},
           {R"({"signing_public_key":"mine"})", "signing_public_key"},
           {R"({"signing_overlap_s":-1,"signing_secret":"generate"})", "signing_overlap_s"},
           {R"({"method":"GET"})", "method"}}) {
    Answer refused = user.call("PUT", "/api/topics/signed", body);
    CHECK_MESSAGE(refused.status == 400, body);
    CHECK_MESSAGE(refused.json()["field"] == field, body, " ", refused.body);
  }
  auto stored = world.dqd->registry().get_topic("signed");
  REQUIRE(stored.is_ok());
  CHECK(stored->signing_keys.size() == 2);  // nothing changed
  CHECK(stored->method == "POST");
}

}  // namespace dq::test

TEST_CASE("LoginLimiter counts a name per address, an address, and a name everywhere") {
  dq::LoginLimiter limiter(5, 20, 100, 300000);
  for (int i = 0; i < 5; ++i) {
    CHECK(limiter.wait_s("10.0.0.1", "admin", 1000 + i) == 0);
    limiter.failed("10.0.0.1", "admin", 1000 + i);
  }
  CHECK(limiter.wait_s("10.0.0.1", "admin", 2000) == 299);  // until the first failure leaves
  CHECK(limiter.wait_s("10.0.0.2", "admin", 2000) == 0);    // elsewhere: not locked
  CHECK(limiter.wait_s("10.0.0.1", "alice", 2000) == 0);    // another name: not locked yet
  CHECK(limiter.wait_s("10.0.0.1", "admin", 301000) == 0);  // the window passed
  // A right password clears that name at that address.
  limiter.failed("10.0.0.3", "ops", 1000);
  limiter.succeeded("10.0.0.3", "ops");
  for (int i = 0; i < 4; ++i) {
    limiter.failed("10.0.0.3", "ops", 2000);
  }
  CHECK(limiter.wait_s("10.0.0.3", "ops", 2000) == 0);
  // One address trying many names.
  for (int i = 0; i < 20; ++i) {
    limiter.failed("10.0.0.4", "name" + std::to_string(i), 5000);
  }
  CHECK(limiter.wait_s("10.0.0.4", "someone", 5000) > 0);
  // One name guessed from many addresses, four tries each: everywhere at 100.
  for (int i = 0; i < 100; ++i) {
    CHECK(limiter.wait_s("10.1.0." + std::to_string(i / 4), "root", 6000) == 0);
    limiter.failed("10.1.0." + std::to_string(i / 4), "root", 6000);
  }
  CHECK(limiter.wait_s("10.9.9.9", "root", 6000) > 0);
}
