// How long a stopping consumer may take: it finishes every callback it holds
// (each ends within its topic's timeout_ms) and records the outcome while the
// job's lease (timeout_ms + lease_margin_ms) still holds, so a graceful
// reload or stop never makes a job go out twice. The master waits this long
// for a retiring dq-consume before SIGKILL; the consumer keeps its outcome
// recorders this long (docs/decisions.md, "A drain waits for the longest
// callback").
#pragma once

#include <cstdint>
#include <vector>

#include "common/core/config.h"
#include "common/registry/registry.h"

namespace dq {

// max(drain_timeout_ms, longest_topic_timeout_ms + lease_margin_ms).
int64_t consumer_drain_ms(const Config& config, int64_t longest_topic_timeout_ms);

// The longest timeout_ms among `topics` (0 when there are none).
int64_t longest_topic_timeout_ms(const std::vector<Topic>& topics);

// consumer_drain_ms() with the topics of the registry at config.sqlite_path
// (every topic, offline ones too: a consumer may hold a call of a topic taken
// offline). When the registry cannot be read: the longest timeout a topic may
// have, so a drain is never cut short.
int64_t consumer_drain_ms_from_registry(const Config& config);

}  // namespace dq
