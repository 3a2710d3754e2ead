#include "nereus/runtime/message.h"

#include <fmt/format.h>

namespace nereus::runtime {

std::string message_id::to_string() const {
    return fmt::format("{}:{}:{}:{}", ledger, entry, partition, batch_index);
}

}  // namespace nereus::runtime
