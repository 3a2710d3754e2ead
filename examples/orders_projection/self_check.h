#pragma once

// `orders_projection --self-check`: the whole worked scenario of seed 001 against a running
// broker, deciding PASS only if the projection equals the source's final state exactly.
//
//  1. A fresh source topic `orders-selfcheck-<ms>`: `initial_orders` orders created, then
//     `pre_mutations` random updates / deletes (tombstones) / re-creates.
//  2. A writer thread keeps mutating (batches of 10, paced, at most `background_mutations`)
//     from before the projection starts until the drain.
//  3. Projection process #1 (this binary, `--project`, RESUME): registers, which bootstraps
//     (compaction = snapshot + barrier) while the writer writes; after its first SNAPSHOT page
//     it pauses, the self-check commits `burst_mutations` more (receipted: committed while the
//     snapshot is being processed) and lets it continue; after applying its
//     `crash_after_event_pages`-th EVENT page and before acking it, it is SIGKILLed by pid.
//     The self-check then checks the kill really fell between apply and ack: the projection's
//     applied cursor (SQLite) is beyond the acknowledged one (the events API's position()).
//  4. Projection process #2 (RESUME) continues after the acknowledged cursor and is SIGKILLed
//     after polling its 2nd EVENT page, before applying it. Process #3 (RESUME) is handed the
//     pages after the two killed (still leased) ones first and must defer them; the killed
//     pages come back after their leases: #1's must be recognised by apply_once (a count of 0
//     fails), #2's is applied. The writer stops (ending on an update), #3 drains through the
//     last receipted message (applied and acknowledged) and exits 0.
//  5. Compare the projection's rows (SQLite) with the source's final state read back
//     independently (source_dump.h): equal count, equal digest, equal lines.
//  6. Projection process #4 with restart SNAPSHOT: a rebuild at a new epoch, compared again.
//
// Prints progress lines and, last, one line "orders_projection self-check: PASS|FAIL ...".
// Returns the exit code: 0 only on PASS.
//
// Ownership: starts and stops (SIGKILL / reap, by pid) every process it starts.
// Thread-safety: the process's main thread (plus its writer thread).

#include <chrono>
#include <cstdint>
#include <string>

namespace orders {

struct self_check_options {
    std::string service_url;
    std::string admin_url;
    std::string work_dir;
    std::string self_exe;  // this binary (the projection processes)
    std::uint32_t initial_orders = 300;
    std::uint32_t pre_mutations = 300;
    std::uint32_t burst_mutations = 200;
    std::uint32_t background_mutations = 600;
    std::uint32_t page_size = 50;
    std::uint32_t crash_after_event_pages = 2;
    std::uint64_t seed = 1;
    bool snapshot_restart = true;         // step 6
    bool debug_ack_before_apply = false;  // make the projection ack before applying (must FAIL)
    std::chrono::seconds budget{230};     // everything, well under the 4 minutes
};

int run_self_check(const self_check_options& o);

}  // namespace orders
