// Implements common/registry/shared_registry.h: the calls of the two
// registry scripts, their replies, and a blocking client of the shard.
#include "common/registry/shared_registry.h"

#include "common/store/lua_scripts.h"

namespace dq {
namespace {

const std::string kPrefix = "{dq}:registry:";
std::string versions_prefix() { return kPrefix + "v:"; }
std::string rows_prefix() { return kPrefix + "row:"; }
std::string changes_key() { return kPrefix + "changes"; }
std::string log_key() { return kPrefix + "log"; }

const char* mode_name(PutMode mode) {
  switch (mode) {
    case PutMode::kCreate:
      return "create";
    case PutMode::kPublish:
      return "publish";
    case PutMode::kUpdate:
      return "update";
    case PutMode::kDelete:
      return "delete";
  }
  return "?";
}

std::string reply_text(const redisReply* reply) {
  if (reply != nullptr &&
      (reply->type == REDIS_REPLY_STRING || reply->type == REDIS_REPLY_STATUS)) {
    return std::string(reply->str, reply->len);
  }
  if (reply != nullptr && reply->type == REDIS_REPLY_INTEGER) {
    return std::to_string(reply->integer);
  }
  return "";
}

int64_t reply_number(const redisReply* reply) {
  std::string text = reply_text(reply);
  try {
    return text.empty() ? 0 : std::stoll(text);
  } catch (const std::exception&) {
    return 0;
  }
}

Status bad_reply(const std::string& what) {
  return Status(Code::kInternal, "shared registry: unexpected reply to " + what);
}

// A row as the shared copy stores it ("" for a deleted object).
Result<std::optional<Json>> parse_row(const std::string& text) {
  if (text.empty()) {
    return std::optional<Json>();
  }
  Json row = Json::parse(text, nullptr, false);
  if (row.is_discarded() || !row.is_object()) {
    return Status(Code::kInternal, "shared registry: a stored row is not a JSON object");
  }
  return std::optional<Json>(std::move(row));
}

}  // namespace

ScriptCall registry_put_call(const PutRequest& request) {
  ScriptCall call;
  call.script = &kRegistryPutScript;
  call.keys = {versions_prefix() + request.kind, rows_prefix() + request.kind, changes_key(),
               log_key()};
  call.args = {request.name, mode_name(request.mode),
               request.expected ? std::to_string(*request.expected) : "",
               request.row ? request.row->dump() : "", request.kind + "\n" + request.name};
  return call;
}

Result<PutAnswer> parse_put_reply(const PutRequest& request, const redisReply* reply) {
  if (reply == nullptr || reply->type != REDIS_REPLY_ARRAY || reply->elements != 3) {
    return bad_reply("registry_put");
  }
  PutAnswer answer;
  std::string outcome = reply_text(reply->element[0]);
  answer.ok = outcome == "ok";
  answer.refusal = answer.ok ? "" : outcome;
  answer.now.kind = request.kind;
  answer.now.name = request.name;
  answer.now.version = reply_number(reply->element[1]);
  if (answer.ok) {
    if (request.mode != PutMode::kDelete) {
      answer.now.row = request.row;
    }
    return answer;
  }
  auto row = parse_row(reply_text(reply->element[2]));
  if (!row.is_ok()) {
    return row.status();
  }
  answer.now.row = std::move(*row);
  return answer;
}

Status put_refusal_status(const PutRequest& request, const PutAnswer& answer) {
  const std::string what = request.kind + " '" + request.name + "'";
  if (answer.refusal == "conflict") {
    return Status(Code::kConflict,
                  version_conflict_message(request.kind, request.name, request.expected.value_or(0),
                                           answer.now.version));
  }
  if (answer.refusal == "exists") {
    return Status(Code::kConflict, what + " already exists");
  }
  if (answer.refusal == "deleted") {
    return Status(Code::kConflict, what + " was deleted on another host");
  }
  return Status(Code::kNotFound, what + " does not exist");
}

ScriptCall registry_changes_call(int64_t after, int limit) {
  ScriptCall call;
  call.script = &kRegistryChangesScript;
  call.keys = {changes_key(), log_key()};
  call.args = {std::to_string(after), std::to_string(limit), versions_prefix(), rows_prefix()};
  return call;
}

Result<ChangeBatch> parse_changes_reply(const redisReply* reply) {
  if (reply == nullptr || reply->type != REDIS_REPLY_ARRAY || reply->elements % 4 != 1) {
    return bad_reply("registry_changes");
  }
  ChangeBatch batch;
  batch.counter = reply_number(reply->element[0]);
  for (size_t i = 1; i + 3 < reply->elements; i += 4) {
    std::string member = reply_text(reply->element[i]);
    size_t cut = member.find('\n');
    if (cut == std::string::npos) {
      return bad_reply("registry_changes (a log member without a kind)");
    }
    RegistryRecord record;
    record.kind = member.substr(0, cut);
    record.name = member.substr(cut + 1);
    batch.last = reply_number(reply->element[i + 1]);
    record.version = reply_number(reply->element[i + 2]);
    auto row = parse_row(reply_text(reply->element[i + 3]));
    if (!row.is_ok()) {
      return row.status();
    }
    record.row = std::move(*row);
    batch.records.push_back(std::move(record));
  }
  return batch;
}

ShardAddress shared_registry_shard(const Config& config) {
  return config.shards.empty() ? ShardAddress{"127.0.0.1", 6379, ""} : config.shards.front();
}

Status shared_registry_failure(const std::string& shard, const Status& status) {
  return Status(status.code(),
                "the shared registry on redis shard " + shard + " failed: " + status.message());
}

SharedRegistry::SharedRegistry(const Config& config)
    : shard_name_(shared_registry_shard(config).name()),
      connection_(shared_registry_shard(config), config.redis_connect_timeout_ms,
                  config.redis_command_timeout_ms) {}

Result<PutAnswer> SharedRegistry::put(const PutRequest& request) {
  auto reply = connection_.run(registry_put_call(request));
  if (!reply.is_ok()) {
    return shared_registry_failure(shard_name_, reply.status());
  }
  return parse_put_reply(request, reply->get());
}

Result<ChangeBatch> SharedRegistry::changes(int64_t after, int limit) {
  auto reply = connection_.run(registry_changes_call(after, limit));
  if (!reply.is_ok()) {
    return shared_registry_failure(shard_name_, reply.status());
  }
  return parse_changes_reply(reply->get());
}

}  // namespace dq
