// How long a topic's ended jobs are remembered (the "end memory" argument of
// the scripts that end jobs: remember_end in common/store/lua/lib/prelude.lua):
// its dedup window, within which an add of a delivered or dead job's id and
// body is answered instead of run again, and its history (keep_done_days),
// within which GET answers a gone job's final state. One record serves both;
// it lives for the longer of the two.
#pragma once

#include <cstdint>
#include <string>

namespace dq {

struct EndMemory {
  int64_t dedup_ms = 0;
  int64_t keep_ms = 0;  // history: keep_done_days in ms

  bool remembers_nothing() const { return dedup_ms <= 0 && keep_ms <= 0; }
  bool keeps_history() const { return keep_ms > 0; }
  // The scripts' argument: "dedup ms:keep ms", or "0" for nothing.
  std::string arg() const;
};

EndMemory end_memory_of(int64_t dedup_window_s, int64_t keep_done_days);
// A topic's (common/registry/registry.h: the store does not include the
// registry, which builds on it).
template <typename TopicRow>
EndMemory end_memory_of(const TopicRow& topic) {
  return end_memory_of(topic.dedup_window_s, topic.keep_done_days);
}

// The longest a delivery's detail keeps of the receiver's answer (bytes).
constexpr size_t kHistoryAnswerBytes = 100;

// A delivery's detail for the topic's history (ack.lua): "status|host|the
// answer's first kHistoryAnswerBytes bytes" (cut on a UTF-8 boundary),
// or "" when the topic keeps none.
std::string delivery_detail(const EndMemory& memory, int status, const std::string& host,
                            const std::string& answer);

}  // namespace dq
