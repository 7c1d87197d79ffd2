// Implements common/registry/registry_write.h.
#include "common/registry/registry_write.h"

#include <memory>

#include "common/registry/registry_copy.h"
#include "common/registry/registry_file.h"

namespace dq {
namespace {

// The put a write makes, from the row its change would leave here.
Result<PutRequest> prepare_put(sqlite3* db, const ObjectWrite& write) {
  auto row = preview_registry_row(db, *write.kind, write.name, write.change);
  if (!row.is_ok()) {
    return row.status();
  }
  PutRequest request;
  request.kind = write.kind->kind;
  request.name = write.name;
  request.mode = write.mode;
  request.expected = write.expected;
  request.row = write.mode == PutMode::kDelete ? std::nullopt : *row;
  auto have = local_version(db, request.kind, request.name);
  if (!have.is_ok()) {
    return have.status();
  }
  if (write.mode == PutMode::kUpdate && !request.expected) {
    request.expected = have->version;
  }
  // The row above is this copy's object with the change applied: offered at
  // a version this copy does not hold, it would undo what that version
  // changed. Older: a stale edit. Newer: this copy has not pulled it yet.
  if (request.expected && *request.expected < have->version) {
    return Status(Code::kConflict, version_conflict_message(request.kind, request.name,
                                                            *request.expected, have->version));
  }
  if (request.expected && *request.expected > have->version) {
    return Status(Code::kUnavailable, "this host's copy of " + request.kind + " '" + request.name +
                                          "' is at version " + std::to_string(have->version) +
                                          ", older than the version " +
                                          std::to_string(*request.expected) +
                                          " you read; nothing was written, try again in a second");
  }
  return request;
}

// Writes here what the shared copy answered: the accepted change, or (when
// refused) the newer state it holds, so this copy catches up at once.
Result<int64_t> finish_put(sqlite3* db, const PutRequest& request, const PutAnswer& answer) {
  if (answer.ok || answer.now.version > 0) {
    // Should this fail after the shared copy took the change, the change
    // stands: the sync writes it here on its next pull.
    auto transaction = Transaction::begin(db);
    if (transaction.is_ok() && apply_registry_record(db, answer.now).is_ok()) {
      (void)(*transaction)->commit();
    }
  }
  if (!answer.ok) {
    return put_refusal_status(request, answer);
  }
  return answer.now.version;
}

}  // namespace

Result<int64_t> write_registry_object(sqlite3* db, SharedRegistry* shared,
                                      const ObjectWrite& write) {
  // Nothing is written to a file deleted or replaced under dq: no other
  // process would read it (common/registry/registry_file.h).
  Status in_place = check_registry_file(db);
  if (!in_place.is_ok()) {
    return in_place;
  }
  if (shared == nullptr) {
    return local_versioned_write(db, *write.kind, write.name, write.expected, write.change);
  }
  auto request = prepare_put(db, write);
  if (!request.is_ok()) {
    return request.status();
  }
  auto answer = shared->put(*request);
  if (!answer.is_ok()) {
    return answer.status();
  }
  return finish_put(db, *request, *answer);
}

void write_registry_object_async(sqlite3* db, const ShardSet& shards, const ObjectWrite& write,
                                 std::function<void(Result<int64_t>)> done) {
  Status in_place = check_registry_file(db);
  if (!in_place.is_ok()) {
    return done(in_place);
  }
  auto request = prepare_put(db, write);
  if (!request.is_ok()) {
    return done(request.status());
  }
  if (shards.size() == 0) {
    return done(Status(Code::kUnavailable, "the shared registry has no redis shard"));
  }
  std::string shard = shards.names[0];
  auto put = std::make_shared<PutRequest>(std::move(*request));
  ask(shards, 0, registry_put_call(*put), deadline_after(shards.timeout_ms),
      [db, put, shard, done](Result<const redisReply*> reply) {
        if (!reply.is_ok()) {
          return done(shared_registry_failure(shard, reply.status()));
        }
        auto answer = parse_put_reply(*put, *reply);
        if (!answer.is_ok()) {
          return done(answer.status());
        }
        done(finish_put(db, *put, *answer));
      });
}

}  // namespace dq
