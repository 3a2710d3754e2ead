#pragma once

// `nereus storage verify --data-dir D`: an offline check of a data directory that changes
// nothing. It checks every journal block and segment record (D/streams), every metadata record
// (D/meta) and every object (D/objects), printing one line per problem with what and where.

#include <string>

namespace nereus::app {

// Layout of a data directory, shared by every command that opens one.
inline constexpr const char* kStreamsSubdir = "streams";
inline constexpr const char* kMetaSubdir = "meta";
inline constexpr const char* kObjectsSubdir = "objects";

// Returns the exit status: 0 all verified, 1 corruption found, 2 cannot check (I/O error,
// missing directory).
int run_storage_verify(const std::string& data_dir);

}  // namespace nereus::app
