// CallbackFaults (see callback_faults.h).
#include "tests/fault/callback_faults.h"

namespace dq::test {

const char* fault_name(CallbackFault fault) {
  switch (fault) {
    case CallbackFault::none:
      return "200";
    case CallbackFault::error500:
      return "500";
    case CallbackFault::busy429:
      return "429";
    case CallbackFault::hang:
      return "hang";
    case CallbackFault::hang_up:
      return "hang-up";
    case CallbackFault::redirect:
      return "302";
    case CallbackFault::slow:
      return "slow-200";
    case CallbackFault::takes12s:
      return "12s-200";
    case CallbackFault::quick:
      return "150ms-200";
  }
  return "?";
}

struct CallbackFaults::State {
  std::mutex mutex;
  int faulty_attempts = 1;
  std::map<std::string, CallbackFault> by_topic;
  std::map<std::string, int> seen;  // arrivals per key
  std::vector<Arrival> arrivals;
  std::string base_url;
};

namespace {

CallbackAnswer answer_for(CallbackFault fault, const std::string& self_url) {
  CallbackAnswer answer;
  switch (fault) {
    case CallbackFault::none:
      break;
    case CallbackFault::error500:
      answer.status = 500;
      break;
    case CallbackFault::busy429:
      answer.status = 429;
      break;
    case CallbackFault::hang:
      answer.status = 503;  // if anyone still listens by then
      answer.delay_ms = CallbackFaults::kHangMs;
      break;
    case CallbackFault::hang_up:
      answer.hang_up = true;
      break;
    case CallbackFault::redirect:
      answer.status = 302;
      answer.location = self_url;
      break;
    case CallbackFault::slow:
      answer.delay_ms = CallbackFaults::kSlowMs;
      break;
    case CallbackFault::takes12s:
      answer.delay_ms = CallbackFaults::kLongMs;
      break;
    case CallbackFault::quick:
      answer.delay_ms = CallbackFaults::kQuickMs;
      break;
  }
  return answer;
}

// The status the callback server ends up sending, 0 when it sends none.
int recorded_status(const CallbackAnswer& answer) {
  if (answer.hang_up) {
    return 0;
  }
  if (answer.delay_ms >= CallbackFaults::kHangMs && answer.delay_ms != CallbackFaults::kLongMs) {
    return 0;
  }
  return answer.status;
}

}  // namespace

CallbackFaults::CallbackFaults(CallbackServer& server, int faulty_attempts)
    : server_(server), state_(std::make_shared<State>()) {
  state_->faulty_attempts = faulty_attempts;
  state_->base_url = server.url("/t/");
  server_.set_responder([state = state_](const RecordedRequest& request, size_t) {
    std::lock_guard<std::mutex> lock(state->mutex);
    std::string topic = request.path.substr(request.path.rfind('/') + 1);
    std::string key = topic + "/" + request.header("x-dq-id");
    int n = state->seen[key]++;
    auto fault = state->by_topic.find(topic);
    CallbackAnswer answer;
    if (fault != state->by_topic.end() && n < state->faulty_attempts) {
      answer = answer_for(fault->second, state->base_url + topic);
    }
    state->arrivals.push_back({key, recorded_status(answer), request.arrived_ms});
    return answer;
  });
}

std::string CallbackFaults::url_for(const std::string& topic, CallbackFault fault) {
  std::lock_guard<std::mutex> lock(state_->mutex);
  state_->by_topic[topic] = fault;
  return state_->base_url + topic;
}

std::vector<Arrival> CallbackFaults::arrivals() const {
  std::lock_guard<std::mutex> lock(state_->mutex);
  return state_->arrivals;
}

}  // namespace dq::test
