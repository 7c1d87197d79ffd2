#include "common/store/add_batcher.h"

#include <cstddef>
#include <utility>

namespace dq {
namespace {

// Bounds on one call: Redis runs a script to its end before anything else,
// so a call of 128 jobs (~1 ms) keeps other clients' latency low.
constexpr size_t kMostJobs = 128;
constexpr size_t kMostBytes = 1 << 20;

}  // namespace

AddBatcher::AddBatcher(event_base* base)
    : flush_event_(event_new(base, -1, 0, &AddBatcher::on_flush, this)) {}

AddBatcher::~AddBatcher() = default;

void AddBatcher::add(AsyncShard* writer, const std::string& next_home, const AddRequest& request,
                     JobDone done) {
  Batch* batch = nullptr;
  for (auto& queued : batches_) {
    if (queued.writer == writer && queued.next_home == next_home) {
      batch = &queued;
    }
  }
  if (batch == nullptr) {
    batches_.push_back({writer, next_home, add_call_for(next_home), {}, 0});
    batch = &batches_.back();
  }
  append_add(&batch->call, request.topic, request.id, request.body, request.due, request.expiry,
             request.after_keys);
  batch->done.push_back(std::move(done));
  batch->bytes += request.body.size() + request.id.size();
  if (batch->done.size() >= kMostJobs || batch->bytes >= kMostBytes) {
    Batch full = std::move(*batch);
    batches_.erase(batches_.begin() + (batch - batches_.data()));
    send(std::move(full));
    return;
  }
  if (!scheduled_) {
    scheduled_ = true;
    // Runs after the callbacks already active in this turn (the other
    // requests that arrived with this one).
    event_active(flush_event_.get(), EV_TIMEOUT, 0);
  }
}

void AddBatcher::flush(bool all) {
  scheduled_ = false;
  std::vector<Batch> batches = std::move(batches_);
  batches_.clear();
  for (auto& batch : batches) {
    if (!all && in_flight_[batch.writer] > 0) {
      batches_.push_back(std::move(batch));  // leaves with that call's reply
    } else {
      send(std::move(batch));
    }
  }
}

void AddBatcher::send(Batch batch) {
  AsyncShard* writer = batch.writer;
  ++in_flight_[writer];
  std::weak_ptr<AddBatcher*> self = self_;
  writer->run(std::move(batch.call),
              [self, writer, done = std::move(batch.done)](const Result<const redisReply*>& reply) {
                // The held batch goes to Redis before this call's adds are
                // answered: Redis works on it while the answers are written.
                if (auto alive = self.lock()) {
                  (*alive)->on_reply(writer);
                }
                for (size_t i = 0; i < done.size(); ++i) {
                  done[i](reply, i);
                }
              });
}

void AddBatcher::on_reply(AsyncShard* writer) {
  if (--in_flight_[writer] > 0) {
    return;
  }
  for (size_t i = 0; i < batches_.size(); ++i) {
    if (batches_[i].writer != writer) {
      continue;
    }
    Batch held = std::move(batches_[i]);
    batches_.erase(batches_.begin() + static_cast<std::ptrdiff_t>(i));
    send(std::move(held));
    writer->write_now();
    return;  // the others with this writer leave with this call's reply
  }
}

void AddBatcher::on_flush(evutil_socket_t, short, void* arg) {
  static_cast<AddBatcher*>(arg)->flush();
}

}  // namespace dq
