// ConsumerLoop's part of the topic caps (consumer/permit_keeper.h): how many
// permits to keep on hand per capped topic, and reserves that take no more
// jobs of a capped topic than the permits taken for them.
#include <algorithm>
#include <set>

#include "common/registry/topic_caps.h"
#include "consumer/consumer_loop.h"
#include "consumer/shard_calls.h"
#include "consumer/slot_planner.h"

namespace dq {

// Enough permits for the jobs known to be ready (the last reserve on each
// shard counted them), within the slots the topic may hold in this process
// and what its caps could give at once.
void ConsumerLoop::update_permit_wants(const std::vector<Topic>& online) {
  const int cap = topic_cap(config_.consumer_concurrency, online.size());
  std::set<std::string> capped;
  for (const Topic& topic : online) {
    if (has_caps(topic)) {
      capped.insert(topic.name);
    }
  }
  // A topic that lost its caps or went offline wants no permits any more.
  for (const std::string& name : capped_) {
    if (capped.count(name) == 0) {
      Topic gone;
      gone.name = name;
      permits_->want(gone, 0, 0);
      waiting_.erase(name);
    }
  }
  capped_ = std::move(capped);
  for (const Topic& topic : online) {
    if (!has_caps(topic)) {
      continue;
    }
    int64_t ready = 0;
    auto seen = waiting_.find(topic.name);
    if (seen != waiting_.end()) {
      for (const auto& [shard, jobs] : seen->second) {
        ready += jobs;
      }
    }
    auto held = in_flight_.find(topic.name);
    int64_t calls = held == in_flight_.end() ? 0 : held->second;
    int64_t room = cap - calls;
    if (topic.max_in_flight > 0) {
      // Our own calls hold permits already: never ask for more than the rest.
      room = std::min<int64_t>(room, topic.max_in_flight - calls);
    }
    int64_t wanted = std::min<int64_t>(ready, room);
    if (topic.max_rate > 0) {
      wanted = std::min<int64_t>(wanted, effective_burst(topic));
    }
    // Permits taken for reserves in flight are on their way to being used.
    int64_t lent = 0;
    for (const auto& state : shards_) {
      auto taken = state.permits.find(topic.name);
      if (taken != state.permits.end()) {
        lent += taken->second.count;
      }
    }
    // While it has jobs, the topic would hold permits for every slot it may
    // use here, if it is far from its caps (a block: no Redis call per call).
    int64_t ahead = ready > 0 ? room - lent : 0;
    permits_->want(topic, static_cast<int>(std::max<int64_t>(0, wanted - lent)),
                   static_cast<int>(std::max<int64_t>(0, ahead)));
  }
}

// Clamps each capped topic's slot to the permits on hand, taking them for
// this reserve; returns the capped topics whose ready jobs it should count
// (LLEN): those it took no permits for.
std::vector<std::string> ConsumerLoop::take_permits(const std::vector<Topic>& online,
                                                    std::vector<ReserveSlot>& slots,
                                                    ShardState& state) {
  std::vector<std::string> probe;
  for (ReserveSlot& slot : slots) {
    auto topic = std::find_if(online.begin(), online.end(),
                              [&](const Topic& t) { return t.name == slot.topic; });
    if (topic == online.end() || !has_caps(*topic)) {
      continue;
    }
    PermitBatch taken = permits_->take(slot.topic, slot.cap);
    slot.cap = taken.count;
    slot.share = std::min(slot.share, slot.cap);
    if (taken.count > 0) {
      // What the reserve brings says whether more wait (note_brought).
      state.permits[slot.topic] = taken;
    } else {
      probe.push_back(slot.topic);
    }
  }
  return probe;
}

// A reserve that used every permit taken for a capped topic may have left
// more of its jobs on the shard; one that used fewer while it had room for
// more took the last (until the next LLEN says otherwise).
void ConsumerLoop::note_brought(size_t shard, const std::map<std::string, PermitBatch>& lent,
                                const ReserveReply& reply) {
  for (const auto& [topic, batch] : lent) {
    int brought = 0;
    for (const auto& job : reply.jobs) {
      brought += job.job.topic == topic ? 1 : 0;
    }
    if (brought >= batch.count) {
      waiting_[topic][shard] = kMoreReady;
    } else if (static_cast<int>(reply.jobs.size()) < reply.asked) {
      waiting_[topic][shard] = 0;
    }
  }
}

void ConsumerLoop::give_back_unused(std::map<std::string, PermitBatch>& permits) {
  for (auto& [topic, unused] : permits) {
    permits_->put_back(topic, unused);
  }
  permits.clear();
}

// A call ended (or never started): its permit goes back.
void ConsumerLoop::end_call(Delivery& delivery) {
  if (delivery.permit) {
    permits_->give_back(delivery.job.topic);
    delivery.permit = false;
  }
}

}  // namespace dq
