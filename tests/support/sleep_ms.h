// sleep_ms for tests: one definition, shared by the support headers.
#pragma once

#include <chrono>
#include <thread>

namespace dq::test {

inline void sleep_ms(int ms) { std::this_thread::sleep_for(std::chrono::milliseconds(ms)); }

}  // namespace dq::test
