#pragma once
// Phase timings, for finding where a fit spends its time: with GPUML_TRACE=1 in the environment,
// each mark waits for the context's queued work and prints the milliseconds since the previous
// mark to stderr (so marks change the timing they measure only by those waits). Off, the
// default, a mark costs one branch.
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "gpuml/core/context.hpp"

namespace gpuml::detail {

class Trace {
 public:
  Trace(const Context& ctx, const char* what) : ctx_(ctx), what_(what) {
    if (enabled()) start_ = last_ = Clock::now();
  }
  Trace(const Trace&) = delete;
  Trace& operator=(const Trace&) = delete;

  void mark(const char* phase) {
    if (!enabled()) return;
    ctx_.synchronize();
    const Clock::time_point now = Clock::now();
    std::fprintf(stderr, "gpuml trace: %s: %-28s %9.3f ms\n", what_, phase, milliseconds(last_, now));
    last_ = now;
  }

  ~Trace() {
    if (enabled()) std::fprintf(stderr, "gpuml trace: %s: %-28s %9.3f ms\n", what_, "(total)", milliseconds(start_, last_));
  }

  static bool enabled() {
    static const bool on = [] {
      const char* v = std::getenv("GPUML_TRACE");
      return v != nullptr && std::strcmp(v, "") != 0 && std::strcmp(v, "0") != 0;
    }();
    return on;
  }

 private:
  using Clock = std::chrono::steady_clock;
  static double milliseconds(Clock::time_point a, Clock::time_point b) {
    return std::chrono::duration<double, std::milli>(b - a).count();
  }
  const Context& ctx_;
  const char* what_;
  Clock::time_point start_, last_;
};

}  // namespace gpuml::detail
