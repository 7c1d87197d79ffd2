#include "common/redis/cluster_slot.h"

#include <strings.h>

#include <cstdlib>
#include <cstring>

namespace dq {

uint16_t crc16_xmodem(std::string_view data) {
  uint16_t crc = 0;
  for (unsigned char byte : data) {
    crc ^= static_cast<uint16_t>(byte) << 8;
    for (int bit = 0; bit < 8; ++bit) {
      crc = (crc & 0x8000) ? static_cast<uint16_t>((crc << 1) ^ 0x1021)
                           : static_cast<uint16_t>(crc << 1);
    }
  }
  return crc;
}

int key_slot(std::string_view key) {
  size_t open = key.find('{');
  if (open != std::string_view::npos) {
    size_t close = key.find('}', open + 1);
    if (close != std::string_view::npos && close > open + 1) {
      key = key.substr(open + 1, close - open - 1);
    }
  }
  return crc16_xmodem(key) & (kClusterSlots - 1);
}

std::optional<ClusterRedirect> parse_redirect(std::string_view error) {
  ClusterRedirect redirect;
  if (error.rfind("MOVED ", 0) == 0) {
    error.remove_prefix(6);
  } else if (error.rfind("ASK ", 0) == 0) {
    redirect.ask = true;
    error.remove_prefix(4);
  } else {
    return std::nullopt;
  }
  size_t space = error.find(' ');
  if (space == std::string_view::npos || space == 0) {
    return std::nullopt;
  }
  std::string slot(error.substr(0, space));
  char* end = nullptr;
  long value = std::strtol(slot.c_str(), &end, 10);
  if (*end != '\0' || value < 0 || value >= kClusterSlots) {
    return std::nullopt;
  }
  redirect.slot = static_cast<int>(value);
  std::string where(error.substr(space + 1));
  // host:port (the host may be empty: "the node you asked", per Redis 7).
  size_t colon = where.rfind(':');
  if (colon == std::string::npos) {
    return std::nullopt;
  }
  redirect.host = where.substr(0, colon);
  long port = std::strtol(where.c_str() + colon + 1, &end, 10);
  if (*end != '\0' || port <= 0 || port > 65535) {
    return std::nullopt;
  }
  redirect.port = static_cast<int>(port);
  return redirect;
}

bool is_cluster_retry(std::string_view error) {
  return error.rfind("TRYAGAIN", 0) == 0 || error.rfind("CLUSTERDOWN", 0) == 0;
}

namespace {

std::optional<ClusterNode> node_of(const redisReply* entry) {
  if (entry == nullptr || entry->type != REDIS_REPLY_ARRAY || entry->elements < 2 ||
      entry->element[0]->type != REDIS_REPLY_STRING ||
      entry->element[1]->type != REDIS_REPLY_INTEGER) {
    return std::nullopt;
  }
  return ClusterNode{std::string(entry->element[0]->str, entry->element[0]->len),
                     static_cast<int>(entry->element[1]->integer)};
}

}  // namespace

std::optional<ClusterNode> slot_owner(const redisReply* reply, int slot,
                                      std::vector<ClusterNode>* all) {
  if (reply == nullptr || reply->type != REDIS_REPLY_ARRAY) {
    return std::nullopt;
  }
  std::optional<ClusterNode> owner;
  for (size_t i = 0; i < reply->elements; ++i) {
    const redisReply* range = reply->element[i];
    if (range->type != REDIS_REPLY_ARRAY || range->elements < 3 ||
        range->element[0]->type != REDIS_REPLY_INTEGER ||
        range->element[1]->type != REDIS_REPLY_INTEGER) {
      continue;
    }
    if (all != nullptr) {
      for (size_t n = 2; n < range->elements; ++n) {
        if (auto node = node_of(range->element[n])) {
          all->push_back(*node);
        }
      }
    }
    if (!owner && slot >= range->element[0]->integer && slot <= range->element[1]->integer) {
      owner = node_of(range->element[2]);
    }
  }
  return owner;
}

namespace {

bool starts_with_default_tag(const std::string& arg) {
  return arg.size() > kDefaultTag.size() && arg.compare(0, kDefaultTag.size(), kDefaultTag) == 0 &&
         arg[kDefaultTag.size()] == ':';
}

void retag(std::string* arg, std::string_view tag) {
  arg->replace(0, kDefaultTag.size(), tag.data(), tag.size());
}

}  // namespace

std::vector<std::string> retag_command(const std::vector<std::string>& argv, std::string_view tag) {
  std::vector<std::string> out = argv;
  if (out.empty() || tag == kDefaultTag) {
    return out;
  }
  bool script = strcasecmp(out[0].c_str(), "FCALL") == 0 ||
                strcasecmp(out[0].c_str(), "EVALSHA") == 0 ||
                strcasecmp(out[0].c_str(), "EVAL") == 0;
  if (script) {
    size_t keys = out.size() > 2 ? std::strtoul(out[2].c_str(), nullptr, 10) : 0;
    for (size_t i = 3; i < out.size() && i < 3 + keys; ++i) {
      if (starts_with_default_tag(out[i])) {
        retag(&out[i], tag);
      }
    }
    return out;
  }
  for (size_t i = 1; i < out.size(); ++i) {
    if (starts_with_default_tag(out[i])) {
      retag(&out[i], tag);
    }
  }
  return out;
}

bool is_scan(const std::vector<std::string>& argv) {
  return !argv.empty() && strcasecmp(argv[0].c_str(), "SCAN") == 0;
}

void untag_scan_reply(redisReply* reply, std::string_view tag) {
  if (reply == nullptr || reply->type != REDIS_REPLY_ARRAY || reply->elements < 2) {
    return;
  }
  redisReply* keys = reply->element[1];
  if (keys->type != REDIS_REPLY_ARRAY) {
    return;
  }
  for (size_t i = 0; i < keys->elements; ++i) {
    redisReply* key = keys->element[i];
    if (key->type != REDIS_REPLY_STRING || key->len < tag.size() ||
        std::memcmp(key->str, tag.data(), tag.size()) != 0) {
      continue;
    }
    // "{dq:3}:x" -> "{dq}:x": shorter, so it fits where it is.
    size_t rest = key->len - tag.size();
    std::memcpy(key->str, kDefaultTag.data(), kDefaultTag.size());
    std::memmove(key->str + kDefaultTag.size(), key->str + tag.size(), rest);
    key->len = kDefaultTag.size() + rest;
    key->str[key->len] = '\0';
  }
}

}  // namespace dq
