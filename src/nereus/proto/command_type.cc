#include "nereus/proto/command_type.h"

#include "nereus/proto/detail/command_table.h"
#include "nereus/proto/pulsar_api.h"

namespace nereus::proto {

// Our plain enum must carry the wire values of the generated one.
#define NEREUS_CHECK_VALUE(name, accessor, pb_name) \
    static_assert(static_cast<int>(command_type::name) == pb::BaseCommand::pb_name);
NEREUS_PROTO_COMMANDS(NEREUS_CHECK_VALUE)
#undef NEREUS_CHECK_VALUE

bool is_known_command_type(std::int32_t raw) noexcept {
    return pb::BaseCommand::Type_IsValid(raw);
}

std::string_view to_string(command_type t) noexcept {
    switch (t) {
#define NEREUS_CASE(name, accessor, pb_name) \
    case command_type::name:                 \
        return #pb_name;
        NEREUS_PROTO_COMMANDS(NEREUS_CASE)
#undef NEREUS_CASE
        case command_type::topic_migrated:
            return "TOPIC_MIGRATED";
    }
    return "UNKNOWN";
}

bool has_body(const pb::BaseCommand& cmd, command_type t) noexcept {
    switch (t) {
#define NEREUS_CASE(name, accessor, pb_name) \
    case command_type::name:                 \
        return cmd.has_##accessor();
        NEREUS_PROTO_COMMANDS(NEREUS_CASE)
#undef NEREUS_CASE
        case command_type::topic_migrated:
            return false;
    }
    return false;
}

void reset_command(pb::BaseCommand& cmd, command_type t) {
    cmd.Clear();
    cmd.set_type(static_cast<pb::BaseCommand::Type>(t));
    switch (t) {
#define NEREUS_CASE(name, accessor, pb_name) \
    case command_type::name:                 \
        cmd.mutable_##accessor();            \
        return;
        NEREUS_PROTO_COMMANDS(NEREUS_CASE)
#undef NEREUS_CASE
        case command_type::topic_migrated:
            return;
    }
}

}  // namespace nereus::proto
