// Implements common/registry/registry_sync.h.
#include "common/registry/registry_sync.h"

#include "common/core/log.h"
#include "common/registry/registry.h"
#include "common/registry/registry_copy.h"

namespace dq {
namespace {

constexpr int kBatch = 500;

}  // namespace

RegistrySync::RegistrySync(const Config& config) : path_(config.sqlite_path), shared_(config) {}

Status RegistrySync::open() {
  if (db_) {
    return Status::ok();
  }
  auto db = open_registry_sqlite(path_);
  if (!db.is_ok()) {
    return db.status();
  }
  db_ = std::move(*db);
  return Status::ok();
}

Status RegistrySync::turn() {
  Status status = open();
  if (status.is_ok()) {
    status = pull();
  }
  if (status.is_ok()) {
    status = push();
  }
  if (!status.is_ok() && status.code() != Code::kUnavailable && status.code() != Code::kUnknown) {
    db_.reset();  // reopen next turn (the file may have been replaced)
  }
  return status;
}

Status RegistrySync::pull() {
  auto seen = seen_change(db_.get());
  if (!seen.is_ok()) {
    return seen.status();
  }
  if (*seen == 0 && !checked_first_) {
    // Never synced: versions this copy has were counted while it did not
    // share (local_versioned_write) and mean nothing to the shared copy.
    Status status = forget_versions(db_.get());
    if (!status.is_ok()) {
      return status;
    }
    pushed_at_data_version_ = -1;
  }
  checked_first_ = true;
  for (;;) {
    auto batch = shared_.changes(*seen, kBatch);
    if (!batch.is_ok()) {
      return batch.status();
    }
    if (batch->counter < *seen) {
      err_log().warn(
          "the shared registry on {} is behind this host's copy (change {} < {}): "
          "it was emptied or replaced; publishing this copy again",
          shared_.shard_name(), batch->counter, *seen);
      Status status = forget_versions(db_.get());
      pushed_at_data_version_ = -1;
      return status;
    }
    if (batch->records.empty()) {
      return Status::ok();
    }
    auto transaction = Transaction::begin(db_.get());
    if (!transaction.is_ok()) {
      return transaction.status();
    }
    for (const RegistryRecord& record : batch->records) {
      auto applied = apply_registry_record(db_.get(), record);
      if (!applied.is_ok()) {
        return applied.status();
      }
      applied_ += *applied ? 1 : 0;
    }
    Status status = set_seen_change(db_.get(), batch->last);
    if (status.is_ok()) {
      status = (*transaction)->commit();
    }
    if (!status.is_ok()) {
      return status;
    }
    *seen = batch->last;
    if (batch->records.size() < static_cast<size_t>(kBatch)) {
      return Status::ok();
    }
  }
}

// Only when another connection wrote this file since the last push: the
// sync's own writes do not change PRAGMA data_version for itself.
Status RegistrySync::push() {
  auto version = pragma_int(db_.get(), "PRAGMA data_version");
  if (!version.is_ok()) {
    return version.status();
  }
  if (*version == pushed_at_data_version_) {
    return Status::ok();
  }
  for (const RegistryKind& kind : registry_kinds()) {
    Status status = push_kind(kind);
    if (!status.is_ok()) {
      return status;
    }
  }
  pushed_at_data_version_ = *version;
  return Status::ok();
}

Status RegistrySync::push_kind(const RegistryKind& kind) {
  auto names = registry_names(db_.get(), kind);
  auto versions = local_versions(db_.get(), kind.kind);
  if (!names.is_ok() || !versions.is_ok()) {
    return names.is_ok() ? versions.status() : names.status();
  }
  for (const std::string& name : *names) {
    auto row = read_registry_row(db_.get(), kind, name);
    if (!row.is_ok()) {
      return row.status();
    }
    if (!*row) {
      continue;  // deleted since listed
    }
    PutRequest request{kind.kind, name, PutMode::kPublish, std::nullopt, *row};
    auto known = versions->find(name);
    if (known != versions->end()) {
      const LocalVersion& have = known->second;
      if (have.row_hash == registry_row_hash(**row)) {
        versions->erase(known);
        continue;  // as versioned
      }
      request.mode = have.row_hash == kDeletedHash ? PutMode::kCreate : PutMode::kUpdate;
      request.expected = have.version;
      versions->erase(known);
    }
    Status status = offer(request);
    if (!status.is_ok()) {
      return status;
    }
  }
  for (const auto& [name, have] : *versions) {
    if (have.row_hash == kDeletedHash) {
      continue;
    }
    Status status = offer(PutRequest{kind.kind, name, PutMode::kDelete, have.version, {}});
    if (!status.is_ok()) {
      return status;
    }
  }
  return Status::ok();
}

Status RegistrySync::offer(const PutRequest& request) {
  auto answer = shared_.put(request);
  if (!answer.is_ok()) {
    return answer.status();
  }
  if (!answer->ok) {
    err_log().warn("registry sync: {} (kept the shared registry's version {})",
                   put_refusal_status(request, *answer).message(), answer->now.version);
  }
  if (!answer->ok && answer->now.version == 0) {
    // The shared copy never held it: forget this version, so a row here is
    // published next turn and a deleted one is forgotten.
    return forget_version(db_.get(), request.kind, request.name);
  }
  auto transaction = Transaction::begin(db_.get());
  if (!transaction.is_ok()) {
    return transaction.status();
  }
  auto applied = apply_registry_record(db_.get(), answer->now);
  if (!applied.is_ok()) {
    return applied.status();
  }
  return (*transaction)->commit();
}

}  // namespace dq
