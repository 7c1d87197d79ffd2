// The words of each alert: subject, mail text and webhook payload, built
// from a shard change, a group of dead-letter events or a crash-loop event.
// Every payload has "kind", "subject" and "text" (chat bots show "text").
#pragma once

#include <string>
#include <vector>

#include "checker/shard_identity.h"
#include "checker/shard_tracker.h"
#include "common/alerts/alert_messages.h"
#include "common/alerts/alert_outbox.h"
#include "common/core/time_text.h"  // format_duration, format_local_datetime

namespace dq {

AlertMessage shard_change_alert(const std::string& shard, const ShardChange& change,
                                int failures_needed, int interval_ms);

// A shard came back without its data (checker/shard_identity.h).
AlertMessage data_lost_alert(const std::string& shard, const DataLoss& loss, int64_t now_ms);

// One mail for all of `events` (dead letters of one topic, oldest first).
// `callback_url` may be "" when the topic is gone.
AlertMessage dead_letters_alert(const std::string& topic, const std::string& callback_url,
                                const std::vector<AlertMail>& events, int64_t now_ms);

AlertMessage crash_loop_message(const AlertMail& event, int64_t now_ms);

}  // namespace dq
