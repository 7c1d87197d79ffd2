// count_topic_jobs and purge_topic_jobs: every shard at once, each an async
// chain over SCAN/HSCAN pages (one round trip per page, each within the
// set's timeout_ms).
#include "common/store/topic_jobs.h"

#include <functional>
#include <memory>
#include <string_view>
#include <vector>

#include "common/store/dead_letters.h"
#include "common/store/keys.h"
#include "common/store/placement.h"
#include "common/store/script_calls.h"

namespace dq {
namespace {

using Next = std::function<void(Status)>;
// One page of items (keys, or hash fields); calls next() to go on.
using PageFn = std::function<void(std::vector<std::string> items, Next next)>;

// Runs head + cursor + MATCH pattern COUNT 1000 until the cursor comes back
// to 0, page by page. pairs: HSCAN's field, value, ... (fields are kept).
// Items present throughout the walk are all seen; one may be seen twice.
void scan_pages(const ShardSet& set, size_t index, const std::vector<std::string>& head,
                const std::string& pattern, bool pairs, PageFn page, Next done,
                const std::string& cursor = "0") {
  std::vector<std::string> argv = head;
  argv.insert(argv.end(), {cursor, "MATCH", pattern, "COUNT", "1000"});
  ask(set, index, argv, deadline_after(set.timeout_ms),
      [set, index, head, pattern, pairs, page, done](Result<const redisReply*> reply) {
        if (!reply.is_ok()) {
          return done(reply.status());
        }
        const redisReply* r = *reply;
        if (r->type != REDIS_REPLY_ARRAY || r->elements != 2 ||
            r->element[0]->type != REDIS_REPLY_STRING || r->element[1]->type != REDIS_REPLY_ARRAY) {
          return done(Status(Code::kInternal, "unexpected reply to " + head[0] +
                                                  " from Redis shard " + set.names[index]));
        }
        std::string next_cursor(r->element[0]->str, r->element[0]->len);
        std::vector<std::string> items;
        const redisReply* list = r->element[1];
        for (size_t i = 0; i < list->elements; i += pairs ? 2 : 1) {
          items.emplace_back(list->element[i]->str, list->element[i]->len);
        }
        page(std::move(items),
             [set, index, head, pattern, pairs, page, done, next_cursor](const Status& status) {
               if (!status.is_ok() || next_cursor == "0") {
                 return done(status);
               }
               scan_pages(set, index, head, pattern, pairs, page, done, next_cursor);
             });
      });
}

// step(items[i], next) for each item in turn; done() after the last or the
// first failure.
void each_in_turn(std::shared_ptr<std::vector<std::string>> items, size_t at,
                  std::function<void(const std::string&, Next)> step, Next done) {
  if (at >= items->size()) {
    return done(Status::ok());
  }
  const std::string& item = (*items)[at];
  step(item, [items, at, step, done](const Status& status) {
    if (!status.is_ok()) {
      return done(status);
    }
    each_in_turn(items, at + 1, step, done);
  });
}

// Every hash key matching `key_pattern` on the shard, then each() with the
// pages of its fields matching `fields`.
void scan_hashes(const ShardSet& set, size_t index, const std::string& key_pattern,
                 const std::string& fields, const PageFn& each, Next done) {
  auto hashes = std::make_shared<std::vector<std::string>>();
  scan_pages(
      set, index, {"SCAN"}, key_pattern, false,
      [hashes](std::vector<std::string> keys, const Next& next) {
        hashes->insert(hashes->end(), keys.begin(), keys.end());
        next(Status::ok());
      },
      [set, index, hashes, fields, each, done](const Status& status) {
        if (!status.is_ok()) {
          return done(status);
        }
        each_in_turn(
            hashes, 0,
            [set, index, fields, each](const std::string& hash, const Next& next) {
              scan_pages(set, index, {"HSCAN", hash}, fields, true, each, next);
            },
            done);
      });
}

// The fields matching `pattern` of every job record on one shard: each
// bucket hash, and the store v2 flat hash while the shard is converted
// (HSCAN of a missing key: nothing).
void scan_records(const ShardSet& set, size_t index, const std::string& pattern, PageFn each,
                  Next done) {
  scan_hashes(set, index, keys::records_prefix() + "*", pattern, each,
              [set, index, pattern, each, done](const Status& status) {
                if (!status.is_ok()) {
                  return done(status);
                }
                scan_pages(set, index, {"HSCAN", keys::flat_records()}, pattern, true, each, done);
              });
}

Status refused(const std::string& what, const std::string& topic, const Status& status) {
  return Status(status.code(),
                "cannot " + what + " topic " + topic + "'s jobs: " + status.message());
}

// Runs part on every shard at once; the sum, or the first failure.
void on_every_shard(const ShardSet& set,
                    const std::function<void(size_t, std::function<void(Result<int64_t>)>)>& part,
                    std::function<void(Result<int64_t>)> done) {
  fan_out<int64_t>(set.size(), part, [done](std::vector<Result<int64_t>> parts) {
    int64_t total = 0;
    for (auto& one : parts) {
      if (!one.is_ok()) {
        return done(one.status());
      }
      total += *one;
    }
    done(total);
  });
}

// Deletes every job of the topic on one shard (del.lua per job, a page's
// calls pipelined); answers how many.
void delete_jobs(const ShardSet& set, size_t index, const std::string& topic,
                 std::shared_ptr<int64_t> in_flight, std::function<void(Result<int64_t>)> done) {
  auto deleted = std::make_shared<int64_t>(0);
  scan_records(
      set, index, topic + ":*",
      [set, index, topic, deleted, in_flight](std::vector<std::string> found, Next next) {
        struct Page {
          size_t left = 0;
          Status failed;
          Next next;
        };
        auto page = std::make_shared<Page>();
        page->next = std::move(next);
        std::vector<ScriptCall> calls;
        std::string key_topic, id;
        for (const auto& key : found) {
          if (split_job_key(key, &key_topic, &id)) {
            calls.push_back(del_call(topic, id));
          }
        }
        if (calls.empty()) {
          return page->next(Status::ok());
        }
        page->left = calls.size();
        int64_t deadline = deadline_after(set.timeout_ms);
        for (auto& call : calls) {
          ask(set, index, std::move(call), deadline,
              [page, deleted, in_flight](Result<const redisReply*> reply) {
                if (!reply.is_ok()) {
                  if (page->failed.is_ok()) {
                    page->failed = reply.status();
                  }
                } else {
                  const redisReply* r = *reply;  // {1, state} deleted, {0, ''} gone meanwhile
                  if (r->type == REDIS_REPLY_ARRAY && r->elements == 2 &&
                      r->element[0]->type == REDIS_REPLY_INTEGER) {
                    *deleted += r->element[0]->integer;
                    const redisReply* state = r->element[1];
                    if (in_flight && state->type == REDIS_REPLY_STRING &&
                        std::string_view(state->str, state->len) == "w") {
                      ++*in_flight;  // being delivered: that call is not stopped
                    }
                  }
                }
                if (--page->left == 0) {
                  page->next(page->failed);
                }
              });
        }
      },
      [deleted, done](const Status& status) {
        if (!status.is_ok()) {
          return done(status);
        }
        done(*deleted);
      });
}

// One command that answers anything but an error.
void command_ok(const ShardSet& set, size_t index, const std::vector<std::string>& argv,
                Next done) {
  ask(
      set, index, argv, deadline_after(set.timeout_ms),
      [done](Result<const redisReply*> reply) {
        done(reply.is_ok() ? Status::ok() : reply.status());
      },
      Code::kUnknown);
}

// Removes the topic's leftovers on one shard: its per-topic keys and its
// "<topic>:<counter>" fields in the counter hashes (counts, days, totals,
// minutes).
void delete_leftovers(const ShardSet& set, size_t index, const std::string& topic, Next done) {
  std::vector<std::string> counts = {"HDEL", keys::counts()};
  for (const char* state : {"d", "r", "w", "y", "x", "h"}) {
    counts.push_back(topic + ":" + state);
  }
  command_ok(
      set, index, {"DEL", keys::ready(topic), keys::dead(topic)},
      [set, index, topic, counts, done](const Status& status) {
        if (!status.is_ok()) {
          return done(status);
        }
        command_ok(set, index, counts, [set, index, topic, done](const Status& counted) {
          if (!counted.is_ok()) {
            return done(counted);
          }
          // The counter hashes, each walked for the topic's fields.
          auto hashes =
              std::make_shared<std::vector<std::string>>(std::vector<std::string>{keys::totals()});
          auto gather = [hashes](std::vector<std::string> keys, const Next& next) {
            hashes->insert(hashes->end(), keys.begin(), keys.end());
            next(Status::ok());
          };
          scan_pages(
              set, index, {"SCAN"}, keys::stats("*"), false, gather,
              [set, index, topic, hashes, gather, done](const Status& days) {
                if (!days.is_ok()) {
                  return done(days);
                }
                scan_pages(
                    set, index, {"SCAN"}, keys::minute_prefix() + "*", false, gather,
                    [set, index, topic, hashes, done](const Status& minutes) {
                      if (!minutes.is_ok()) {
                        return done(minutes);
                      }
                      each_in_turn(
                          hashes, 0,
                          [set, index, topic](const std::string& hash, const Next& next) {
                            scan_pages(
                                set, index, {"HSCAN", hash}, topic + ":*", true,
                                [set, index, hash](std::vector<std::string> found, Next page_done) {
                                  std::vector<std::string> argv = {"HDEL", hash};
                                  argv.insert(argv.end(), found.begin(), found.end());
                                  if (found.empty()) {
                                    return page_done(Status::ok());
                                  }
                                  command_ok(set, index, argv, page_done);
                                },
                                next);
                          },
                          done);
                    });
              });
        });
      });
}

}  // namespace

void count_topic_jobs(const ShardSet& shards, const std::string& topic,
                      std::function<void(Result<int64_t>)> done) {
  on_every_shard(
      shards,
      [shards, topic](size_t index, std::function<void(Result<int64_t>)> answer) {
        auto total = std::make_shared<int64_t>(0);
        scan_records(
            shards, index, topic + ":*",
            [total](std::vector<std::string> found, const Next& next) {
              *total += static_cast<int64_t>(found.size());
              next(Status::ok());
            },
            [total, answer](const Status& status) {
              if (!status.is_ok()) {
                return answer(status);
              }
              answer(*total);
            });
      },
      [topic, done](Result<int64_t> total) {
        if (!total.is_ok()) {
          return done(refused("count", topic, total.status()));
        }
        done(*total);
      });
}

void purge_topic_jobs(const ShardSet& shards, const std::string& topic,
                      std::function<void(Result<int64_t>)> done,
                      std::shared_ptr<int64_t> in_flight) {
  for (size_t i = 0; i < shards.size(); ++i) {
    if (!shards.shards[i]->up()) {
      return done(
          refused("purge", topic,
                  Status(Code::kUnavailable, "redis shard " + shards.names[i] +
                                                 " is down: " + shards.shards[i]->last_error())));
    }
  }
  on_every_shard(
      shards,
      [shards, topic, in_flight](size_t index, std::function<void(Result<int64_t>)> answer) {
        delete_jobs(shards, index, topic, in_flight, std::move(answer));
      },
      [shards, topic, done](Result<int64_t> deleted) {
        if (!deleted.is_ok()) {
          return done(refused("purge", topic, deleted.status()));
        }
        // Dead-set members whose record was already gone.
        dead_purge(shards, topic, [shards, topic, done, jobs = *deleted](Result<int64_t> dead) {
          if (!dead.is_ok()) {
            return done(refused("purge", topic, dead.status()));
          }
          on_every_shard(
              shards,
              [shards, topic](size_t index, std::function<void(Result<int64_t>)> answer) {
                delete_leftovers(shards, index, topic, [answer](const Status& status) {
                  answer(status.is_ok() ? Result<int64_t>(0) : Result<int64_t>(status));
                });
              },
              [topic, done, total = jobs + *dead](Result<int64_t> left) {
                if (!left.is_ok()) {
                  return done(refused("purge", topic, left.status()));
                }
                done(total);
              });
        });
      });
}

}  // namespace dq
