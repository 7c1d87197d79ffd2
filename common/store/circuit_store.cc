// Implements common/store/circuit_store.h.
#include "common/store/circuit_store.h"

#include <cstdlib>

#include "common/store/keys.h"
#include "common/store/lua_scripts.h"

namespace dq {

std::string keys::circuit(const std::string& name) { return kPrefix + "circuit:" + name; }
std::string keys::circuits() { return kPrefix + "circuits"; }

ScriptCall circuit_report_call(const std::vector<CircuitNote>& notes, int threshold,
                               int64_t open_ms, const std::string& error, const std::string& holder,
                               int64_t lease_ms) {
  ScriptCall call{&kCircuitReportScript,
                  {keys::circuits()},
                  {std::to_string(threshold), std::to_string(open_ms), std::to_string(kMaxOpenMs),
                   error.substr(0, 300), holder, std::to_string(lease_ms)}};
  for (const CircuitNote& note : notes) {
    call.keys.push_back(keys::circuit(note.name));
    call.args.push_back(note.name);
    const char* verdict = note.verdict == CircuitVerdict::kFailed  ? "f"
                          : note.verdict == CircuitVerdict::kAlive ? "a"
                          : note.verdict == CircuitVerdict::kPause ? "p"
                                                                   : "-";
    call.args.emplace_back(verdict);
    call.args.push_back(std::to_string(note.pause_ms));
  }
  return call;
}

ScriptCall circuit_report_call(const std::string& name, bool failed, int threshold, int64_t open_ms,
                               const std::string& error, const std::string& holder,
                               int64_t lease_ms) {
  return circuit_report_call({{name, failed ? CircuitVerdict::kFailed : CircuitVerdict::kAlive, 0}},
                             threshold, open_ms, error, holder, lease_ms);
}

ScriptCall circuit_probe_call(const std::string& receiver, const std::string& holder,
                              int64_t lease_ms) {
  return {&kCircuitProbeScript, {keys::circuit(receiver)}, {holder, std::to_string(lease_ms)}};
}

Circuit circuit_from_reply(const redisReply* reply, size_t first) {
  Circuit circuit;
  if (reply == nullptr || reply->type != REDIS_REPLY_ARRAY) {
    return circuit;
  }
  auto number = [](const std::string& text) { return std::strtoll(text.c_str(), nullptr, 10); };
  for (size_t i = first; i + 1 < reply->elements; i += 2) {
    const redisReply* name = reply->element[i];
    const redisReply* value = reply->element[i + 1];
    if (name->type != REDIS_REPLY_STRING || value->type != REDIS_REPLY_STRING) {
      continue;
    }
    std::string field(name->str, name->len);
    std::string text(value->str, value->len);
    if (field == "phase") {
      circuit.phase = phase_from_name(text);
    } else if (field == "failures") {
      circuit.failures = static_cast<int>(number(text));
    } else if (field == "since") {
      circuit.since_ms = number(text);
    } else if (field == "opened_at") {
      circuit.opened_at_ms = number(text);
    } else if (field == "open_ms") {
      circuit.open_ms = number(text);
    } else if (field == "probe_at") {
      circuit.probe_at_ms = number(text);
    } else if (field == "allowed") {
      circuit.allowed = static_cast<int>(number(text));
    } else if (field == "holder") {
      circuit.holder = text;
    } else if (field == "lease_until") {
      circuit.lease_until_ms = number(text);
    } else if (field == "last_error") {
      circuit.last_error = text;
    } else if (field == "last_error_at") {
      circuit.last_error_ms = number(text);
    } else if (field == "paused_until") {
      circuit.paused_until_ms = number(text);
    } else if (field == "paused_at") {
      circuit.paused_at_ms = number(text);
    }
  }
  return circuit;
}

}  // namespace dq
