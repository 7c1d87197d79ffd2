// Implements common/alerts/circuit_alerts.h.
#include "common/alerts/circuit_alerts.h"

#include "common/core/time_text.h"

namespace dq {
namespace {

// What both alerts carry: the receiver stands where a job's id would.
AlertMail circuit_alert(const char* kind, const Topic& topic, const std::string& receiver,
                        int64_t now_ms) {
  AlertMail mail;
  mail.kind = kind;
  mail.topic = topic.name;
  mail.job_id = receiver;
  mail.recipients = topic.alert_emails;
  mail.created_at_ms = now_ms;
  return mail;
}

}  // namespace

AlertMail circuit_open_alert(const Topic& topic, const std::string& receiver, int failures,
                             int64_t wait_ms, const std::string& last_error, int64_t now_ms) {
  AlertMail mail = circuit_alert("circuit_open", topic, receiver, now_ms);
  mail.attempts = failures;
  mail.error = last_error;
  mail.subject = "[dq] receiver " + receiver + " is failing: calls stopped (circuit open)";
  mail.text = "Calls to " + receiver + " (topic " + topic.name + ", " + topic.callback_url +
              ") failed " + std::to_string(failures) +
              " times in a row; dq stopped calling it at " + format_local_datetime(now_ms) +
              ".\nLast error: " + last_error +
              "\n\nIts jobs wait without using attempts. dq probes it with one call after " +
              format_duration(wait_ms) +
              " (the wait doubles while probes fail) and resumes, ramping up, once probes "
              "succeed.\nYou get one more alert when calls resume. See `dqctl circuits`.\n";
  return mail;
}

AlertMail circuit_closed_alert(const Topic& topic, const std::string& receiver, int64_t open_for_ms,
                               int64_t now_ms) {
  AlertMail mail = circuit_alert("circuit_closed", topic, receiver, now_ms);
  mail.subject = "[dq] receiver " + receiver + " answers again: calls resumed (circuit closed)";
  mail.text = "Calls to " + receiver + " (topic " + topic.name + ") resumed at " +
              format_local_datetime(now_ms) + " after " + format_duration(open_for_ms) +
              " with the circuit open.\nThe jobs that waited are being delivered.\n";
  return mail;
}

}  // namespace dq
