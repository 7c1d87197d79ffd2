// The connections of one server, least recently active first, each with the
// stamp of the last request it started: the server closes the one idle the
// longest when its own limit or the process's descriptor budget
// (server/connection_budget.h) needs room.
#pragma once

#include <cstdint>
#include <functional>
#include <list>
#include <utility>

#include "server/connection_budget.h"

namespace dq {

template <class Connection>
class ActivityOrder {
  struct Entry {
    Connection* connection;
    uint64_t stamp;  // ConnectionBudget::stamp() of its last request
  };

 public:
  // Where a connection stands; the connection keeps it.
  using Place = typename std::list<Entry>::iterator;

  Place add(Connection* connection) {
    return order_.insert(order_.end(), Entry{connection, ConnectionBudget::of_process().stamp()});
  }
  void touch(Place place) {  // it started a request
    place->stamp = ConnectionBudget::of_process().stamp();
    order_.splice(order_.end(), order_, place);
  }
  void remove(Place place) { order_.erase(place); }
  void clear() { order_.clear(); }

  // The least recently active connection for which idle(connection) holds,
  // and its stamp; {nullptr, 0} when there is none.
  template <class Idle>
  std::pair<Connection*, uint64_t> oldest(Idle idle) const {
    for (const Entry& entry : order_) {
      if (std::invoke(idle, entry.connection)) {
        return {entry.connection, entry.stamp};
      }
    }
    return {nullptr, 0};
  }

 private:
  std::list<Entry> order_;
};

}  // namespace dq
