#pragma once
// Where estimators with verbose > 0 write their progress lines (KMeans's "Iteration 3, inertia ...").
// By default stdout; a program (or the Python bindings, which print through sys.stdout so that
// Python's own capture sees the lines) may install its own sink. Process-wide.
#include <string>

#include "gpuml/core/export.hpp"

namespace gpuml {

// `line` ends with a newline. A null sink restores stdout. The sink may be called from any thread
// that fits an estimator, and must not throw.
using ProgressSink = void (*)(const char* line, void* user_data);
GPUML_API void set_progress_sink(ProgressSink sink, void* user_data);

// Writes one progress line to the installed sink.
GPUML_API void write_progress(const std::string& line);

}  // namespace gpuml
