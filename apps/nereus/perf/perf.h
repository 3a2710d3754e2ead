#pragma once

// `nereus perf produce|consume`: a load generator over the Pulsar binary protocol (like
// pulsar-perf). See doc/perf.md for what it measures and how.

#include "apps/nereus/perf/options.h"
#include <memory>

namespace CLI {
class App;
}  // namespace CLI

namespace nereus::app::perf {

struct perf_command;

// Adds `perf produce` and `perf consume` to `app`; their callbacks run the load and set
// `status`. The returned object owns the bound options: keep it alive until parsing is done.
[[nodiscard]] std::shared_ptr<perf_command> add_perf_command(CLI::App& app, int& status);

// Runs one perf session with `o` (not yet finalized). Returns the exit status: 0 when every
// message sent was receipted (and, with --consume, consumed) without errors, 1 otherwise,
// 2 for bad options.
int run_perf(perf_options o);

}  // namespace nereus::app::perf
