#pragma once

// `nereus cursor bench`: the cost of an ack as a function of the cursor's existing ack state.
//
// In one run, on one RocksDB metadata store and one file-system object store under the data
// directory: individual and batch-index ack throughput with 0, 10k and 1M existing holes; for
// each, the bytes written per ack to the metadata store (value bytes of every put) and to the
// object store (bytes written to object files), and the process CPU time per ack (a thread
// blocked in fdatasync uses no CPU, so time spent waiting for syncs is excluded); the cost of one
// cumulative ack that clears all N holes (O(N) by nature, reported separately); recovery (open)
// time with 1M and 10M holes, and with 10M holes in the worst case (the most live delta records
// the cursor keeps before a compaction, written directly with the cursor's encoders), and right
// after that compaction; resident bytes per hole. Targets are printed next to the figures;
// the last line is the machine-readable `cursor-bench: ...` summary.

#include <string>

namespace nereus::app {

struct cursor_bench_options {
    std::string data_dir = "./bench-data";  // a fresh subdirectory is used and removed
    bool quick = false;                     // shorter phases (< 1 min in total)
};

// Prints the table and the final `cursor-bench: ...` line to stdout. Returns the exit status.
int run_cursor_bench(const cursor_bench_options& options);

}  // namespace nereus::app
