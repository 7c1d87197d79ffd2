// A row of the PHP delay queue's dq_topic table as a dq topic. Column by column:
//   topic          -> name (the key producers send as "topic")
//   callback       -> callback_url
//   method         -> method (upper-cased; empty: GET, the PHP default)
//   delay          -> default_delay_s (seconds)
//   timeout        -> timeout_ms: PHP's DqCurl took ms; a value of 60 or less
//                     is taken as seconds (no callback answers in 60 ms)
//   email          -> alert_emails (';' and spaces become ',')
//   createor       -> creator
//   status         -> online when 1, else offline (PHP: "offline or deleted")
//   priority       -> priority (1-3), 2 when absent
//   re_notify_flag -> success_json when it is the simple "{res.PATH}!=VALUE"
//                     (or !==); any other expression is reported, not imported
//   t_name, id     -> not kept (shown by --dry-run)
// Every topic is imported with callback_format "form": its endpoints read
// the form fields the PHP queue sent.
#pragma once

#include <string>
#include <vector>

#include "client/dqctl/php_topic_dump.h"
#include "common/core/status.h"
#include "common/registry/registry.h"

namespace dq::ctl {

// kInvalid when the row has no topic or callback; *notes gets what was not
// carried over.
Result<Topic> topic_from_php_row(const PhpTopicRow& row, std::vector<std::string>* notes);

}  // namespace dq::ctl
