// Implements common/registry/topic_attach.h.
#include "common/registry/topic_attach.h"

#include <map>
#include <string>

namespace dq {

Status attach_rows_to_topics(Statement& stmt, std::vector<Topic>* topics,
                             const std::function<void(Topic&, const Statement&)>& attach) {
  std::map<std::string, Topic*> by_name;
  for (Topic& topic : *topics) {
    by_name[topic.name] = &topic;
  }
  for (;;) {
    auto row = stmt.step();
    if (!row.is_ok()) {
      return row.status();
    }
    if (!*row) {
      return Status::ok();
    }
    auto owner = by_name.find(stmt.column_text(0));
    if (owner != by_name.end()) {
      attach(*owner->second, stmt);
    }
  }
}

}  // namespace dq
