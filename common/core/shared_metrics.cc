// Implements SharedMetrics (see shared_metrics.h). std::atomic of 32/64-bit
// integers is lock-free and address-free on the platforms dq runs on, so the
// same object works from every process that maps it.
#include "common/core/shared_metrics.h"

#include <sys/mman.h>

#include <cstring>
#include <new>

#include "common/core/shard.h"  // stable_hash

namespace dq {

static_assert(std::atomic<uint64_t>::is_always_lock_free);
static_assert(std::atomic<uint32_t>::is_always_lock_free);

struct SharedMetrics::Slot {
  static constexpr uint32_t kEmpty = 0, kClaiming = 1, kReady = 2;
  std::atomic<uint32_t> state;
  uint32_t key_size;
  char key[kKeyBytes];
  std::atomic<uint64_t> buckets[kLatencyBucketCount + 1];
  std::atomic<uint64_t> count;
  std::atomic<uint64_t> sum_us;
};

struct SharedMetrics::Table {
  std::atomic<uint64_t> overflow;
  Slot slots[kSlots];
};

SharedMetrics& SharedMetrics::instance() {
  // Anonymous shared memory: zero-filled (every slot empty), inherited by fork.
  static SharedMetrics metrics([] {
    void* memory =
        mmap(nullptr, sizeof(Table), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (memory == MAP_FAILED) {
      throw std::bad_alloc();
    }
    return new (memory) Table();
  }());
  return metrics;
}

SharedMetrics::Slot* SharedMetrics::find_or_claim(std::string_view key) {
  if (key.size() > kKeyBytes) {
    return nullptr;
  }
  size_t start = stable_hash(key) % kSlots;
  for (size_t probe = 0; probe < kSlots; ++probe) {
    Slot& slot = table_->slots[(start + probe) % kSlots];
    uint32_t state = slot.state.load(std::memory_order_acquire);
    if (state == Slot::kEmpty) {
      uint32_t expected = Slot::kEmpty;
      if (slot.state.compare_exchange_strong(expected, Slot::kClaiming,
                                             std::memory_order_acq_rel)) {
        std::memcpy(slot.key, key.data(), key.size());
        slot.key_size = static_cast<uint32_t>(key.size());
        slot.state.store(Slot::kReady, std::memory_order_release);
        return &slot;
      }
      state = expected;
    }
    // A slot being claimed by another process right now (or left half-claimed
    // by a process killed in those few instructions) is skipped: at worst a
    // key gets a second slot, and for_each merges nothing but shows both.
    if (state == Slot::kReady && slot.key_size == key.size() &&
        std::memcmp(slot.key, key.data(), key.size()) == 0) {
      return &slot;
    }
  }
  return nullptr;
}

void SharedMetrics::observe(std::string_view key, double seconds) {
  Slot* slot = find_or_claim(key);
  if (slot == nullptr) {
    table_->overflow.fetch_add(1, std::memory_order_relaxed);
    return;
  }
  size_t bucket = 0;
  while (bucket < kLatencyBucketCount && seconds > kLatencyBuckets[bucket]) {
    ++bucket;
  }
  slot->buckets[bucket].fetch_add(1, std::memory_order_relaxed);
  slot->count.fetch_add(1, std::memory_order_relaxed);
  uint64_t micros = seconds <= 0 ? 0 : static_cast<uint64_t>(seconds * 1e6);
  slot->sum_us.fetch_add(micros, std::memory_order_relaxed);
}

void SharedMetrics::add(std::string_view key, uint64_t n) {
  Slot* slot = find_or_claim(key);
  if (slot == nullptr) {
    table_->overflow.fetch_add(1, std::memory_order_relaxed);
    return;
  }
  slot->count.fetch_add(n, std::memory_order_relaxed);
}

void SharedMetrics::for_each(
    const std::function<void(std::string_view, const HistogramView&)>& fn) const {
  for (const Slot& slot : table_->slots) {
    if (slot.state.load(std::memory_order_acquire) != Slot::kReady) {
      continue;
    }
    HistogramView view{};
    for (size_t i = 0; i <= kLatencyBucketCount; ++i) {
      view.buckets[i] = slot.buckets[i].load(std::memory_order_relaxed);
    }
    view.count = slot.count.load(std::memory_order_relaxed);
    view.sum_seconds = static_cast<double>(slot.sum_us.load(std::memory_order_relaxed)) / 1e6;
    fn(std::string_view(slot.key, slot.key_size), view);
  }
}

uint64_t SharedMetrics::overflow() const {
  return table_->overflow.load(std::memory_order_relaxed);
}

std::string SharedMetrics::key(std::initializer_list<std::string_view> parts) {
  std::string joined;
  for (auto part : parts) {
    if (!joined.empty()) {
      joined += '\x1f';
    }
    joined += part;
  }
  return joined;
}

void count_redis_command_error(std::string_view shard) {
  SharedMetrics::instance().add(SharedMetrics::key({"redis_error", shard}));
}

}  // namespace dq
