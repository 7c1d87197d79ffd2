// JobService: the API server's asynchronous job store. It runs the same Lua
// scripts as common/job_store.h (built by common/script_calls.h) over one
// AsyncShard per shard, with the same placement: a job goes to the first
// shard of shard_order() that is up; lookups try every shard in that order.
#pragma once

#include <event2/event.h>

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "common/config.h"
#include "common/job.h"
#include "common/status.h"
#include "server/async_shard.h"
#include "server/job_request.h"

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

  // Ok: the due time. kConflict: the id is held already (on any reachable
  // shard). kUnavailable: no shard is up.
  void add(const AddRequest& request, std::function<void(Result<int64_t>)> done);
  // kNotFound, or kUnavailable when not found but a shard is down.
  void get(const std::string& topic, const std::string& id, std::function<void(Result<Job>)> done);
  void del(const std::string& topic, const std::string& id, std::function<void(Status)> done);

  std::vector<ShardHealth> health() const;
  size_t pending() const;  // Redis commands awaiting replies

 private:
  struct AddState;
  // The first index >= `next` in `order` whose shard is up (order.size() when
  // none); sets *saw_down when it passes over a down shard.
  size_t skip_down_shards(const std::vector<size_t>& order, size_t next, bool* saw_down) const;
  void find_job(const std::string& topic, const std::string& id, std::vector<size_t> order,
                size_t next, bool saw_down, std::function<void(Result<Job>)> done);
  void del_from(const std::string& topic, const std::string& id, std::vector<size_t> order,
                size_t next, bool saw_down, std::function<void(Status)> done);

  std::vector<ShardAddress> addresses_;
  std::vector<std::unique_ptr<AsyncShard>> shards_;
};

}  // namespace dq
