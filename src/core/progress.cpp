#include "gpuml/core/progress.hpp"

#include <cstdio>
#include <mutex>

namespace gpuml {

namespace {
std::mutex sink_mutex;  // a sink is replaced and used whole, never half set
ProgressSink sink_function = nullptr;
void* sink_user_data = nullptr;
}  // namespace

void set_progress_sink(ProgressSink sink, void* user_data) {
  std::lock_guard<std::mutex> lock(sink_mutex);
  sink_function = sink;
  sink_user_data = user_data;
}

void write_progress(const std::string& line) {
  std::lock_guard<std::mutex> lock(sink_mutex);
  if (sink_function != nullptr) {
    sink_function(line.c_str(), sink_user_data);
    return;
  }
  std::fputs(line.c_str(), stdout);
  std::fflush(stdout);  // readers of the file descriptor see the line now
}

}  // namespace gpuml
