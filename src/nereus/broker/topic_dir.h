#pragma once

// take_over_topic_dir — the per-owner stream directory of a topic in a data directory shared by
// several brokers (doc/ownership.md). Shared storage stands in for a replicated data plane:
// each owner of a topic writes only its own generation directory `<topic_dir>/<n>`, so a
// superseded owner that wakes up late (SIGSTOP, a long pause) can only write into a directory
// nobody reads any more. Taking a topic over, AFTER the ownership node was created:
//   1. remove leftovers of an interrupted takeover (`*.tmp`);
//   2. copy the newest generation `<g>` to `<g+1>.tmp`, fsync every file and directory, rename
//      it to `<g+1>` and fsync `topic_dir` (a fresh empty `<1>` when there is none);
//   3. remove the generations below `<g+1>`.
// The copy is a crash image of the old owner's stream log (the old owner is dead, stopped or
// fenced; anything it writes after the claim was never confirmed); opening it runs the stream
// log's recovery. Cost: one copy of the topic's retained data per takeover.
//
// Thread-safety: call for one topic at a time (the ownership node serialises takeovers across
// processes). Durability: the returned directory and its content are durable.

#include "nereus/base/result.h"

#include <string>

namespace nereus::broker {

// Returns the path of this owner's generation directory. Errors: the file-system error.
[[nodiscard]] result<std::string> take_over_topic_dir(const std::string& topic_dir);

}  // namespace nereus::broker
