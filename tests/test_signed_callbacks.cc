// Signed callbacks (Standard Webhooks): the signer against the spec's test
// vector, the whsec_ format, rotation and storage; then a real dqd, real
// callback server and dqctl, each recorded callback verified by the npm
// reference library "standardwebhooks" (tests/webhooks/verify.js, installed
// with `npm ci` into the build dir) and, for Ed25519, by node's crypto with
// the key published at GET /v1/signing-keys.
#include <doctest/doctest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <set>
#include <string>
#include <vector>

#include "common/core/clock.h"
#include "common/core/json.h"
#include "common/http/webhook_signature.h"
#include "common/registry/registry.h"
#include "common/registry/signing_keys.h"
#include "common/registry/topic_json.h"
#include "tests/support/callback_server.h"
#include "tests/support/dqd_process.h"
#include "tests/support/e2e.h"
#include "tests/support/http_client.h"
#include "tests/support/npm_tool.h"
#include "tests/support/redis_server.h"
#include "tests/support/run_program.h"

using namespace dq;
using namespace dq::test;

namespace {

// The spec's published example (also the libraries' own test).
constexpr const char* kVectorSecret = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw";
constexpr const char* kVectorId = "msg_p5jXN8AQM9LWM0D4loKWxJek";
constexpr int64_t kVectorTimestamp = 1614265330;
constexpr const char* kVectorBody = "{\"test\": 2432232314}";
constexpr const char* kVectorSignature = "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=";

std::vector<std::string> split_spaces(const std::string& text) {
  std::vector<std::string> parts;
  size_t start = 0;
  while (start <= text.size()) {
    size_t space = text.find(' ', start);
    if (space == std::string::npos) space = text.size();
    if (space > start) parts.push_back(text.substr(start, space - start));
    start = space + 1;
  }
  return parts;
}

// The verifier's directory in the build tree, `npm ci` done once.
const std::string& verifier_dir() {
  static const std::string dir =
      npm_tool_dir("webhooks", {"package.json", "package-lock.json", "verify.js"},
                   "standardwebhooks/package.json");
  return dir;
}

struct Verdicts {
  std::vector<Json> secrets;      // true or the library's error text, per secret
  std::vector<Json> public_keys;  // the same per Ed25519 public key
};

// Runs tests/webhooks/verify.js on one callback as recorded.
Verdicts verify(const std::string& body, const std::map<std::string, std::string>& headers,
                const std::vector<std::string>& secrets,
                const std::vector<std::string>& public_keys = {}) {
  const std::string& dir = verifier_dir();
  Json request{{"body", body},
               {"headers", Json::object()},
               {"secrets", secrets},
               {"public_keys", public_keys}};
  for (const char* name : {"webhook-id", "webhook-timestamp", "webhook-signature"}) {
    auto it = headers.find(name);
    if (it != headers.end()) request["headers"][name] = it->second;
  }
  std::string path = dir + "/case.json";
  std::ofstream(path) << request.dump();
  RunResult run = run_program({"/usr/bin/env", "node", dir + "/verify.js", path}, dir);
  REQUIRE_MESSAGE(run.exit_code == 0, run.out, run.err);
  Json answer = Json::parse(run.out);
  Verdicts verdicts;
  for (const Json& one : answer["secrets"]) verdicts.secrets.push_back(one);
  for (const Json& one : answer["public_keys"]) verdicts.public_keys.push_back(one);
  return verdicts;
}

// A Result's text by value (doctest keeps references to its operands).
std::string text_of(const Result<std::string>& result) {
  return result.is_ok() ? *result : "<error: " + result.status().message() + ">";
}

bool verified(const Json& verdict) { return verdict.is_boolean() && verdict.get<bool>(); }

// The whsec_ secret dqctl printed once.
std::string printed_secret(const std::string& out) {
  size_t at = out.find("whsec_");
  REQUIRE_MESSAGE(at != std::string::npos, out);
  size_t end = out.find_first_of(" \n", at);
  return out.substr(at, end == std::string::npos ? std::string::npos : end - at);
}

struct SignedWorld {
  SignedWorld() : dqd(options()) { dqd.start(); }

  DqdOptions options() {
    DqdOptions options;
    options.shards = {redis.address()};
    options.timers = 1;
    options.consumers = 1;
    options.backoff_unit_ms = 200;
    return options;
  }
  RunResult ctl(std::vector<std::string> args) {
    args.insert(args.begin(), {"-c", dqd.config_path()});
    return run_dqctl(args, dqd.dir());
  }
  Json topic_json(const std::string& name) {
    RunResult shown = ctl({"--json", "topic", "show", name});
    REQUIRE_MESSAGE(shown.exit_code == 0, shown.err);
    return Json::parse(shown.out);
  }
  void add_job(const std::string& topic, const std::string& id, const std::string& body,
               double delay_s = 0) {
    std::string doc = Json{{"id", id}, {"body", Json::parse(body)}, {"delay", delay_s}}.dump();
    HttpResult added;
    // A topic made a moment ago is known to the API server after its next registry read.
    REQUIRE(wait_until(10000, [&] {
      added = http.post(dqd.jobs_url(topic), doc);
      return added.status != 404;
    }));
    REQUIRE_MESSAGE(added.status == 201, added.body);
  }
  // The callbacks of job `id`, in arrival order.
  std::vector<RecordedRequest> calls_of(const std::string& id) {
    std::vector<RecordedRequest> calls;
    for (auto& request : callback.requests()) {
      if (request.header("x-dq-id") == id) calls.push_back(request);
    }
    return calls;
  }
  std::vector<RecordedRequest> wait_calls(const std::string& id, size_t count) {
    REQUIRE(wait_until(20000, [&] { return calls_of(id).size() >= count; }));
    return calls_of(id);
  }
  // Adds jobs ID-1, ID-2, ... to `topic` until one's callback satisfies
  // `wanted` (a consumer reads a changed key on its next registry read), and
  // returns that callback.
  template <typename Wanted>
  RecordedRequest first_call_where(const std::string& topic, const std::string& id, Wanted wanted) {
    for (int n = 1; n <= 50; ++n) {
      std::string one = id + "-" + std::to_string(n);
      add_job(topic, one, "{\"n\": " + std::to_string(n) + "}");
      RecordedRequest call = wait_calls(one, 1)[0];
      if (wanted(call)) return call;
      sleep_ms(200);
    }
    FAIL("no callback of " << topic << " as wanted");
    return {};
  }

  TestRedis redis;
  CallbackServer callback;
  DqdProcess dqd;
  HttpClient http;
};

}  // namespace

TEST_CASE("the signer gives the spec's test vector; whsec_ and base64 parse strictly") {
  auto key = make_hmac_key(kVectorSecret, 0);
  REQUIRE(key.is_ok());
  CHECK(webhook_signature({*key}, 0, kVectorId, kVectorTimestamp, kVectorBody) == kVectorSignature);
  // Another body, id or timestamp gives another signature.
  CHECK(webhook_signature({*key}, 0, kVectorId, kVectorTimestamp, "{\"test\": 2432232315}") !=
        kVectorSignature);
  CHECK(webhook_signature({*key}, 0, kVectorId, kVectorTimestamp + 1, kVectorBody) !=
        kVectorSignature);

  CHECK(base64_encode("") == "");
  CHECK(base64_encode("f") == "Zg==");
  CHECK(base64_encode("foobar") == "Zm9vYmFy");
  // Values, not references into a temporary Result: doctest keeps the operands.
  CHECK(text_of(base64_decode("Zg==")) == "f");
  CHECK(text_of(base64_decode("Zg")) == "f");  // padding optional
  CHECK_FALSE(base64_decode("Zg=").is_ok());
  CHECK_FALSE(base64_decode("Z!==").is_ok());
  CHECK_FALSE(base64_decode("Zm9v-_").is_ok());  // URL-safe letters are not standard base64

  CHECK(parse_whsec(kVectorSecret)->size() == 24);
  std::string missing_prefix = parse_whsec("MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw").status().message();
  CHECK(missing_prefix.rfind("signing_secret: ", 0) == 0);
  CHECK(parse_whsec("whsec_@@@@").status().message() ==
        "signing_secret: the part after whsec_ is not standard base64");
  CHECK(parse_whsec("whsec_" + base64_encode(std::string(23, 'x'))).status().message() ==
        "signing_secret: holds 23 bytes; it must hold 24 to 64");
  CHECK_FALSE(parse_whsec("whsec_" + base64_encode(std::string(65, 'x'))).is_ok());
  CHECK(parse_whsec("whsec_" + base64_encode(std::string(64, 'x'))).is_ok());

  auto generated = make_hmac_key("generate", 5);
  REQUIRE(generated.is_ok());
  CHECK(generated->raw.size() == 32);
  CHECK(text_of(parse_whsec(generated->secret)) == generated->raw);
  CHECK(masked_secret(kVectorSecret) == "whsec_MfKQ...");
  CHECK_FALSE(parse_whsec(masked_secret(kVectorSecret)).is_ok());
}

TEST_CASE("rotation sends both keys for the overlap, then only the new one") {
  std::vector<SigningKey> keys;
  auto first = make_hmac_key("generate", 1000);
  auto second = make_hmac_key("generate", 2000);
  auto third = make_hmac_key("generate", 3000);
  rotate_signing_key(&keys, *first, 1000, 60000);
  rotate_signing_key(&keys, *second, 2000, 60000);
  REQUIRE(keys.size() == 2);
  CHECK(keys[0].retires_at_ms == 62000);
  CHECK(keys[1].retires_at_ms == 0);
  CHECK(current_signing_key(keys, "hmac")->key_id == second->key_id);
  CHECK(split_spaces(webhook_signature(keys, 61999, "msg_x", 61, "{}")).size() == 2);
  std::string after = webhook_signature(keys, 62000, "msg_x", 62, "{}");
  CHECK(after == webhook_signature({*second}, 62000, "msg_x", 62, "{}"));
  // A rotation after the overlap drops the expired key; overlap 0 drops the old one at once.
  rotate_signing_key(&keys, *third, 70000, 0);
  REQUIRE(keys.size() == 1);
  CHECK(keys[0].key_id == third->key_id);

  // Ed25519 keys rotate on their own, beside the HMAC one.
  SigningKey pair = make_ed25519_key(70000);
  rotate_signing_key(&keys, pair, 70000, 1000);
  CHECK(pair.public_key.rfind("whpk_", 0) == 0);
  CHECK(base64_decode(pair.public_key.substr(5))->size() == 32);
  auto both = split_spaces(webhook_signature(keys, 70000, "msg_x", 70, "{}"));
  REQUIRE(both.size() == 2);
  CHECK(both[0].rfind("v1,", 0) == 0);
  CHECK(both[1].rfind("v1a,", 0) == 0);
  remove_signing_keys(&keys, "hmac");
  CHECK(split_spaces(webhook_signature(keys, 70000, "msg_x", 70, "{}")).size() == 1);
}

TEST_CASE("webhook-id: one per job instance, another for a re-added job") {
  Job job;
  job.topic = "orders";
  job.id = "a b|订单";
  job.incarnation = "17";
  job.created_at_ms = 1000;
  std::string id = webhook_message_id(job);
  CHECK(id.size() == 4 + 32);
  CHECK(id.rfind("msg_", 0) == 0);
  job.attempts = 5;
  job.body = "{\"other\":1}";
  CHECK(webhook_message_id(job) == id);  // attempts and body do not change it
  Job again = job;
  again.incarnation = "18";
  CHECK(webhook_message_id(again) != id);
  Job other_topic = job;
  other_topic.topic = "orders2";
  CHECK(webhook_message_id(other_topic) != id);
}

TEST_CASE("keys are stored with their topic, refused on GET, gone with the topic") {
  std::string dir = make_temp_dir("dq-signing");
  {
    auto registry = Registry::open(dir + "/dq.db");
    REQUIRE(registry.is_ok());
    Topic topic;
    topic.name = "signed";
    topic.callback_url = "http://127.0.0.1:9/cb";
    REQUIRE(set_topic_signing(&topic, "signing_secret", "generate", 1000, now_ms()).is_ok());
    REQUIRE(set_topic_signing(&topic, "signing_public_key", "generate", 1000, now_ms()).is_ok());
    REQUIRE((*registry)->add_topic(topic).is_ok());
    auto stored = (*registry)->get_topic("signed");
    REQUIRE(stored.is_ok());
    REQUIRE(stored->signing_keys.size() == 2);
    CHECK(stored->signing_keys == topic.signing_keys);
    CHECK(stored->signing_keys[0].raw == topic.signing_keys[0].raw);

    // Shown masked; sent back as shown, it changes nothing.
    Json shown = topic_to_json(*stored);
    std::string masked = shown["signing_secret"];
    CHECK(masked == masked_secret(topic.signing_keys[0].secret));
    CHECK(shown.dump().find(topic.signing_keys[0].secret) == std::string::npos);
    CHECK(shown.dump().find(topic.signing_keys[1].secret) == std::string::npos);
    CHECK(shown["signing_public_key"] == topic.signing_keys[1].public_key);
    Topic edited = *stored;
    REQUIRE(set_topic_signing(&edited, "signing_secret", masked, 1000, now_ms()).is_ok());
    REQUIRE(set_topic_signing(&edited, "signing_public_key", shown["signing_public_key"], 1000,
                              now_ms())
                .is_ok());
    CHECK(edited.signing_keys == stored->signing_keys);
    CHECK(new_signing_secret(*stored, edited).empty());
    CHECK(set_topic_signing(&edited, "signing_secret", "whsec_short", 1000, now_ms())
              .message()
              .rfind("signing_secret: ", 0) == 0);
    CHECK(set_topic_signing(&edited, "signing_public_key", "whpk_x", 1000, now_ms())
              .message()
              .rfind("signing_public_key: ", 0) == 0);
    CHECK(signing_overlap_ms(-1).status().message().rfind("signing_overlap_s: ", 0) == 0);

    // A GET callback has no body to sign.
    edited.method = "GET";
    Status refused = (*registry)->update_topic(edited);
    CHECK(refused.code() == Code::kInvalid);
    CHECK(refused.message().rfind("method: a GET callback has no body to sign", 0) == 0);
    CHECK((*registry)->get_topic("signed")->method == "POST");  // nothing changed

    // Deleted with its keys: re-added under the same name, it is unsigned.
    REQUIRE((*registry)->delete_topic("signed").is_ok());
    Topic plain;
    plain.name = "signed";
    plain.callback_url = "http://127.0.0.1:9/cb";
    REQUIRE((*registry)->add_topic(plain).is_ok());
    CHECK((*registry)->get_topic("signed")->signing_keys.empty());
  }
  remove_dir(dir);
}

TEST_CASE("a signed callback verifies with standardwebhooks; other body, secret or time fails") {
  SignedWorld world;
  world.callback.answer_with({500}, 200);  // the first attempt fails: the retry is signed alike
  RunResult added = world.ctl({"topic", "add", "hooks", "--callback", world.callback.url(),
                               "--signing-secret", "generate"});
  REQUIRE_MESSAGE(added.exit_code == 0, added.err);
  std::string secret = printed_secret(added.out);
  CHECK(parse_whsec(secret).is_ok());
  // Never shown again in full.
  Json shown = world.topic_json("hooks");
  CHECK(shown["signing_secret"] == masked_secret(secret));
  CHECK(world.ctl({"topic", "list"}).out.find(secret) == std::string::npos);
  CHECK(world.ctl({"--json", "topic", "list"}).out.find(secret) == std::string::npos);

  world.add_job("hooks", "order 1", "{\"amount\": 12.5}");
  auto calls = world.wait_calls("order 1", 2);
  std::string other = make_hmac_key("generate", 0)->secret;
  for (const RecordedRequest& call : calls) {
    CHECK(call.header("x-dq-attempt") != "");
    int64_t timestamp = std::stoll(call.header("webhook-timestamp"));
    CHECK(std::llabs(timestamp - wall_ms() / 1000) < 60);
    CHECK(split_spaces(call.header("webhook-signature")).size() == 1);
    Verdicts good = verify(call.body, call.headers, {secret, other});
    CHECK(verified(good.secrets[0]));
    CHECK_FALSE(verified(good.secrets[1]));  // another secret
    Verdicts changed = verify(call.body + " ", call.headers, {secret});
    CHECK_FALSE(verified(changed.secrets[0]));  // a changed body
  }
  // The same webhook-id on every attempt of the job (the receiver's idempotency key).
  CHECK(calls[0].header("webhook-id") == calls[1].header("webhook-id"));
  CHECK(calls[0].header("webhook-timestamp") <= calls[1].header("webhook-timestamp"));

  // The library refuses a timestamp more than five minutes old, signed right.
  auto key = make_hmac_key(secret, 0);
  REQUIRE(key.is_ok());
  std::map<std::string, std::string> old_headers = calls[1].headers;
  int64_t old = wall_ms() / 1000 - 6 * 60;
  old_headers["webhook-timestamp"] = std::to_string(old);
  old_headers["webhook-signature"] =
      webhook_signature({*key}, now_ms(), old_headers["webhook-id"], old, calls[1].body);
  Verdicts stale = verify(calls[1].body, old_headers, {secret});
  CHECK(stale.secrets[0] == "Message timestamp too old");
  int64_t recent = wall_ms() / 1000 - 60;
  old_headers["webhook-timestamp"] = std::to_string(recent);
  old_headers["webhook-signature"] =
      webhook_signature({*key}, now_ms(), old_headers["webhook-id"], recent, calls[1].body);
  CHECK(verified(verify(calls[1].body, old_headers, {secret}).secrets[0]));

  // The same id added again (with another body: the same one within the
  // topic's dedup window is a retry of the first add) is another job
  // instance: another webhook-id.
  world.add_job("hooks", "order 1", "{\"amount\": 12.5, \"again\": true}");
  auto again = world.wait_calls("order 1", 3);
  CHECK(again[2].header("webhook-id") != calls[0].header("webhook-id"));
  CHECK(verified(verify(again[2].body, again[2].headers, {secret}).secrets[0]));

  // Unsigned topics send no webhook headers; a GET topic cannot be signed.
  RunResult plain = world.ctl({"topic", "add", "plain", "--callback", world.callback.url()});
  REQUIRE(plain.exit_code == 0);
  world.add_job("plain", "p1", "{}");
  auto plain_calls = world.wait_calls("p1", 1);
  CHECK(plain_calls[0].header("webhook-signature") == "");
  CHECK(plain_calls[0].header("webhook-id") == "");
  RunResult get = world.ctl({"topic", "set", "hooks", "--method", "GET"});
  CHECK(get.exit_code != 0);
  CHECK(contains(get.err, "a GET callback has no body to sign"));
  RunResult bad = world.ctl({"topic", "set", "plain", "--signing-secret", "whsec_abc"});
  CHECK(bad.exit_code != 0);
  CHECK(contains(bad.err, "signing_secret: holds 2 bytes; it must hold 24 to 64"));
  RunResult overlap = world.ctl({"topic", "set", "plain", "--overlap", "5x"});
  CHECK(overlap.exit_code != 0);
  CHECK(contains(overlap.err, "--overlap '5x' must be a duration"));
  CHECK(world.topic_json("plain")["signing_keys"].empty());  // nothing changed
}

TEST_CASE("rotation: both signatures during the overlap, each verifying; only the new after") {
  SignedWorld world;
  RunResult added = world.ctl(
      {"topic", "add", "rot", "--callback", world.callback.url(), "--signing-secret", "generate"});
  REQUIRE(added.exit_code == 0);
  std::string first = printed_secret(added.out);
  RunResult rotated = world.ctl({"topic", "set", "rot", "--signing-secret", "generate"});
  REQUIRE_MESSAGE(rotated.exit_code == 0, rotated.err);
  std::string second = printed_secret(rotated.out);
  REQUIRE(first != second);
  Json keys = world.topic_json("rot")["signing_keys"];
  REQUIRE(keys.size() == 2);
  int64_t retires = keys[0]["retires_at_ms"];
  CHECK(retires - keys[1]["created_at_ms"].get<int64_t>() == 24 * 3600 * 1000);  // the default

  auto during = world.first_call_where("rot", "during", [](const RecordedRequest& call) {
    return split_spaces(call.header("webhook-signature")).size() == 2;
  });
  Verdicts both = verify(during.body, during.headers, {first, second});
  CHECK(verified(both.secrets[0]));
  CHECK(verified(both.secrets[1]));
  // Each entry verifies with exactly its own secret.
  auto entries = split_spaces(during.header("webhook-signature"));
  for (size_t i = 0; i < entries.size(); ++i) {
    auto one = during.headers;
    one["webhook-signature"] = entries[i];
    Verdicts alone = verify(during.body, one, {first, second});
    CHECK(verified(alone.secrets[i]));
    CHECK_FALSE(verified(alone.secrets[1 - i]));
  }

  // A rotation with a 3 s overlap: a job due after it ends carries the new signature only.
  RunResult short_overlap =
      world.ctl({"topic", "set", "rot", "--signing-secret", "generate", "--overlap", "3s"});
  REQUIRE(short_overlap.exit_code == 0);
  std::string third = printed_secret(short_overlap.out);
  // The second key now retires 3 s from now; the first keeps its 24 h.
  Json now_keys = world.topic_json("rot")["signing_keys"];
  int64_t second_retires = 0;
  for (const Json& key : now_keys) {
    if (key["retires_at_ms"] != 0 && key["retires_at_ms"] < retires) {
      second_retires = key["retires_at_ms"];
    }
  }
  REQUIRE(second_retires > 0);
  double delay_s = static_cast<double>(second_retires + 1500 - wall_ms()) / 1000.0;
  world.add_job("rot", "after", "{\"n\": 2}", delay_s > 0 ? delay_s : 0);
  auto after = world.wait_calls("after", 1)[0];
  CHECK(after.arrived_ms > second_retires);
  Verdicts late = verify(after.body, after.headers, {first, second, third});
  CHECK(verified(late.secrets[0]));        // its 24 h overlap still runs
  CHECK_FALSE(verified(late.secrets[1]));  // overlap over: no longer sent
  CHECK(verified(late.secrets[2]));
  CHECK(split_spaces(after.header("webhook-signature")).size() == 2);
}

TEST_CASE("Ed25519: v1a verifies with the key published at GET /v1/signing-keys") {
  SignedWorld world;
  RunResult added = world.ctl({"topic", "add", "ed", "--callback", world.callback.url(),
                               "--signing-secret", "generate", "--signing-ed25519", "generate"});
  REQUIRE_MESSAGE(added.exit_code == 0, added.err);
  std::string secret = printed_secret(added.out);
  std::string public_key = world.topic_json("ed")["signing_public_key"];
  REQUIRE(public_key.rfind("whpk_", 0) == 0);

  // Published without a token, as receivers fetch it.
  Json published;
  REQUIRE(wait_until(10000, [&] {
    published = world.http.get(world.dqd.base_url() + "/v1/signing-keys?topic=ed").json();
    return published.contains("keys") && published["keys"].size() == 1;
  }));
  CHECK(published["keys"][0]["topic"] == "ed");
  CHECK(published["keys"][0]["public_key"] == public_key);
  CHECK(published["keys"][0]["retires_at_ms"] == 0);
  CHECK(published.dump().find("whsk_") == std::string::npos);
  CHECK(published.dump().find("whsec_") == std::string::npos);
  Json all = world.http.get(world.dqd.base_url() + "/v1/signing-keys").json();
  CHECK(all["keys"].size() == 1);
  Json none = world.http.get(world.dqd.base_url() + "/v1/signing-keys?topic=nope").json();
  CHECK(none["keys"].empty());
  CHECK(world.http.post(world.dqd.base_url() + "/v1/signing-keys", "{}").status == 405);

  world.add_job("ed", "e1", "{\"x\": [1, 2]}");
  auto call = world.wait_calls("e1", 1)[0];
  auto entries = split_spaces(call.header("webhook-signature"));
  REQUIRE(entries.size() == 2);
  // One of each, in either order (a receiver checks every entry).
  std::sort(entries.begin(), entries.end());
  CHECK(entries[0].rfind("v1,", 0) == 0);
  CHECK(entries[1].rfind("v1a,", 0) == 0);
  std::string other_key = make_ed25519_key(0).public_key;
  Verdicts verdicts = verify(call.body, call.headers, {secret}, {public_key, other_key});
  CHECK(verified(verdicts.secrets[0]));  // the HMAC library skips the v1a entry
  CHECK(verified(verdicts.public_keys[0]));
  CHECK_FALSE(verified(verdicts.public_keys[1]));
  CHECK_FALSE(verified(verify(call.body + "x", call.headers, {}, {public_key}).public_keys[0]));

  // Rotating the pair publishes both keys for the overlap.
  RunResult rotated = world.ctl({"topic", "set", "ed", "--signing-ed25519", "generate"});
  REQUIRE(rotated.exit_code == 0);
  std::string new_key = world.topic_json("ed")["signing_public_key"];
  CHECK(new_key != public_key);
  REQUIRE(wait_until(10000, [&] {
    published = world.http.get(world.dqd.base_url() + "/v1/signing-keys?topic=ed").json();
    return published.contains("keys") && published["keys"].size() == 2;
  }));
  std::set<std::string> listed;
  for (const Json& key : published["keys"]) listed.insert(key["public_key"].get<std::string>());
  CHECK(listed == std::set<std::string>{public_key, new_key});
  auto rotated_call = world.first_call_where("ed", "e2", [](const RecordedRequest& call) {
    return split_spaces(call.header("webhook-signature")).size() == 3;
  });
  Verdicts two = verify(rotated_call.body, rotated_call.headers, {}, {public_key, new_key});
  CHECK(verified(two.public_keys[0]));
  CHECK(verified(two.public_keys[1]));

  // --signing-ed25519 off stops v1a; the route lists nothing for the topic.
  REQUIRE(world.ctl({"topic", "set", "ed", "--signing-ed25519", "off"}).exit_code == 0);
  REQUIRE(wait_until(10000, [&] {
    published = world.http.get(world.dqd.base_url() + "/v1/signing-keys?topic=ed").json();
    return published.contains("keys") && published["keys"].empty();
  }));
}
