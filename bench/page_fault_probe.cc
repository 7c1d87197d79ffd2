// What a page fault costs on this machine, for bench/run's report.
//
// Redis pays one fault per 4 KiB page it grows into and, after every fork
// (AOF rewrite, RDB save, replica sync), one more per page on the first write
// to it: the fork left the page write-protected for copy-on-write, and the
// fault stays even after the child has exited. On bare metal a fault costs
// well under a microsecond; on some VMs (shadow paging, free page reporting
// to the host) it costs 10+ µs with millisecond tails, and a multi-GB Redis
// then crawls for seconds after each fork. bench/run prints these figures
// beside every run so its 10M-pending rows can be read against them.
//
//   page_fault_probe [MIB]   (default 512)
// prints: first_touch_us=.. after_fork_us=.. after_fork_worst_ms=.. warm_write_us=..
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstddef>
#include <cstdio>
#include <cstdlib>

namespace {

constexpr std::size_t kPage = 4096;

struct Pass {
  double us_per_page = 0;
  double worst_ms = 0;
};

// Writes one byte into every page of [memory, memory + size), timing each.
Pass write_every_page(char* memory, std::size_t size) {
  using Clock = std::chrono::steady_clock;
  const auto start = Clock::now();
  Clock::duration worst{};
  for (std::size_t offset = 0; offset < size; offset += kPage) {
    const auto before = Clock::now();
    memory[offset] = static_cast<char>(memory[offset] + 1);
    const auto took = Clock::now() - before;
    if (took > worst) {
      worst = took;
    }
  }
  const std::chrono::duration<double, std::micro> total = Clock::now() - start;
  const std::chrono::duration<double, std::milli> worst_ms = worst;
  const auto pages = static_cast<double>(size) / static_cast<double>(kPage);
  return {total.count() / pages, worst_ms.count()};
}

}  // namespace

int main(int argc, char** argv) {
  const long mib = argc > 1 ? std::strtol(argv[1], nullptr, 10) : 512;
  if (mib <= 0) {
    std::fprintf(stderr, "usage: page_fault_probe [MIB]\n");
    return 2;
  }
  const std::size_t size = static_cast<std::size_t>(mib) << 20U;
  void* mapped = mmap(nullptr, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (mapped == MAP_FAILED) {
    std::perror("mmap");
    return 1;
  }
  char* memory = static_cast<char*>(mapped);
  const Pass first = write_every_page(memory, size);
  const Pass warm = write_every_page(memory, size);
  const pid_t child = fork();
  if (child < 0) {
    std::perror("fork");
    return 1;
  }
  if (child == 0) {
    _exit(0);  // the child only has to exist: the parent's pages are now write-protected
  }
  waitpid(child, nullptr, 0);
  const Pass after_fork = write_every_page(memory, size);
  std::printf(
      "first_touch_us=%.2f after_fork_us=%.2f after_fork_worst_ms=%.2f warm_write_us=%.2f\n",
      first.us_per_page, after_fork.us_per_page, after_fork.worst_ms, warm.us_per_page);
  munmap(mapped, size);
  return 0;
}
