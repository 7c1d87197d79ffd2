// A topic's schedules (docs/schedules.md): each adds one job per tick of a
// cron spec (common/core/cron_spec.h) read in a time zone. Kept in the table
// topic_schedules (sql/021_topic_schedules.sql), read and written with the
// topic by common/registry/registry.h, carried in the topic's row of the
// shared registry as "schedules", so every host runs the same ones.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "common/core/cron_spec.h"
#include "common/core/json.h"
#include "common/core/status.h"

namespace dq {

struct TopicSchedule {
  std::string spec;  // as written: "*/15 9-17 * * MON-FRI", "@every 10s"
  // Names the ticks' jobs ("schedule:<id>:<tick>") and the next tick's key;
  // "sch_<16 hex>", made when the schedule is added.
  std::string id;
  std::string tz;                // "": the topic's zone, else UTC
  std::string body = "{}";       // JSON; {{tick}} and {{tick_ms}} are filled in per tick
  std::string catch_up = "one";  // "one" or "none": a tick missed while dq was down
  bool paused = false;
  int64_t created_at_ms = 0;

  bool operator==(const TopicSchedule& other) const;
};

// A new schedule's id.
std::string new_schedule_id();
// The zone a schedule's spec is read in: its own, else the topic's, else UTC.
std::string schedule_zone_name(const TopicSchedule& schedule, const std::string& topic_tz);
// The spec parsed in its zone; kInvalid naming the field ("spec: ...", "tz: ...").
Result<CronSpec> parse_schedule(const TopicSchedule& schedule, const std::string& topic_tz);
// Spec, zone, body (a JSON object or array: a job body), catch_up and that
// no spec repeats; the Status names the schedule and the field.
Status validate_schedules(const std::vector<TopicSchedule>& schedules, const std::string& topic_tz);

// The body of the job a tick adds: the template with {{tick}} (the tick's
// instant "2026-03-30T00:00:00Z") and {{tick_ms}} (epoch ms) filled in.
std::string tick_body(const std::string& body_template, int64_t tick_ms);

// The API's and dqctl's shape: {spec, id, tz, zone, body (as JSON), catch_up,
// paused, created_at_ms}; with next_runs, the next `count` run times after
// now_ms ("next_runs": ["2026-...Z", ...]; none while paused).
Json schedule_to_json(const TopicSchedule& schedule, const std::string& topic_tz);
Json schedule_to_json(const TopicSchedule& schedule, const std::string& topic_tz, int64_t now_ms,
                      size_t count);

}  // namespace dq
