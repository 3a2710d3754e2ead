#pragma once

// `nereus storage bench`: the stream log and metadata store against this machine's own limit.
//
// In one run, on one file system, rounds alternate between (a) the raw group-commit ceiling —
// one thread appending records of the same size to a fresh file and calling fdatasync after
// every group of G records, G = the number of concurrent appenders — and (b) Nereus durable
// appends with G appends in flight; plus (c) metadata CAS ops/s. The disk here switches between a
// fast and a slow fsync regime within minutes, so only the per-round ratio of interleaved runs
// means anything; the summary is the median of those ratios.

#include <string>

namespace nereus::app {

struct storage_bench_options {
    std::string data_dir = "./bench-data";  // a fresh subdirectory is used and removed
    int rounds = 5;
    double seconds_per_run = 1.0;
};

// Prints the table and the final `storage-bench: ...` line to stdout. Returns the exit status.
int run_storage_bench(const storage_bench_options& options);

}  // namespace nereus::app
