// JobService: the API server's asynchronous job store. It runs the same Lua
// scripts as common/job_store.h (built by common/script_calls.h) over one
// AsyncShard per shard, with the same rules (common/placement.h): a job goes
// to the first reachable shard of shard_order(), held until any shard ranked
// before it that could not be asked has been; lookups try every shard.
#pragma once

#include <event2/event.h>

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "common/core/config.h"
#include "common/core/status.h"
#include "common/redis/async_shard.h"
#include "common/redis/shard_health.h"
#include "common/store/job.h"
#include "common/store/placement.h"
#include "server/add_batcher.h"
#include "server/job_request.h"
#include "server/replica_confirm.h"

namespace dq {

struct ShardHealth {
  std::string name;
  bool up = false;
  std::string error;  // why it is down
};

class JobService {
 public:
  JobService(event_base* base, const Config& config);

  void start();  // connects every shard
  // Fails every command still waiting (their callbacks run now, while the
  // HTTP and legacy servers that own the requests still exist) and refuses
  // new ones. Call before destroying those servers.
  void shutdown();

  // kConflict: held with another body (or dead). kUnavailable: nothing was
  // written. kUnknown: sent, no answer (504: a retry is safe). kTimeout:
  // stored on the primary, fewer than [redis] wait_replicas confirmed it
  // (504 replication_timeout: a retry is safe).
  // `done` gets the request back, so a caller need not keep a copy of it.
  using AddDone = std::function<void(const AddRequest& request, Result<Added> added)>;
  void add(AddRequest request, AddDone done);
  // kNotFound, or kUnavailable when not found but a shard is down.
  void get(const std::string& topic, const std::string& id, std::function<void(Result<Job>)> done);
  // in_flight: a copy deleted was being delivered; its callback is not stopped.
  using DelDone = std::function<void(const Status& status, bool in_flight)>;
  void del(const std::string& topic, const std::string& id, DelDone done);

  std::vector<ShardHealth> health() const;
  // The connections, one per shard in config order, lent to the operator
  // reads that fan out over them (common/store/shard_set.h).
  std::vector<AsyncShard*> connections() const;
  // Every shard's first connect has ended (up or failed).
  bool first_connects_ended() const;
  size_t pending() const;  // Redis commands awaiting replies

 private:
  struct AddState;
  struct Lookup;
  void add_round(std::shared_ptr<AddState> state);
  void run_add(std::shared_ptr<AddState> state);
  // HGET of the job's metadata on every shard that is up, each answered
  // within the probe timeout; then `done` with what was seen.
  void look_everywhere(const std::string& topic, const std::string& id,
                       const std::function<void(std::shared_ptr<Lookup>)>& done);
  void find_job(const std::string& topic, const std::string& id, std::vector<size_t> order,
                size_t next, bool saw_down, std::function<void(Result<Job>)> done);
  void read_body(size_t shard, Job job, bool body_read, std::function<void(Result<Job>)> done);
  static void read_last_error(AsyncShard* redis, Job job, std::function<void(Result<Job>)> done);
  // Connected, and not marked down by dq-redis-checker.
  bool usable(size_t shard);

  std::vector<ShardAddress> addresses_;
  std::vector<std::string> names_;
  std::vector<std::unique_ptr<AsyncShard>> shards_;
  // One per shard when [redis] wait_replicas > 0: adds run there and wait
  // for the replicas; empty otherwise.
  std::vector<std::unique_ptr<ReplicaConfirm>> confirms_;
  int probe_timeout_ms_;
  ShardHealthView checker_;  // dq-redis-checker's verdicts, beside each connection's own
  AddBatcher batcher_;       // adds of one loop turn to one shard: one add.lua call
};

}  // namespace dq
