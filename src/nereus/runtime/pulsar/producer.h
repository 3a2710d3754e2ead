#pragma once

// The producer pool's port over one nereus::client producer (one per topic per connection,
// opened by the first publish: publisher.h).
//
// send(): *confirmed* — completes with the id of the broker's SEND_RECEIPT (Nereus receipts a
//   message once it is durable); a payload over the broker's max size is refused
//   (errc::message_too_large) without harming the producer.
// close(): waits for pending receipts (bounded by the client's operation timeout) and closes
//   the producer on the broker.
//
// Ownership: owned by the runtime's producer pool. Thread-safety: strand-confined to the
// runtime's executor.

#include "nereus/client/producer.h"
#include "nereus/runtime/ports.h"

#include <memory>

namespace nereus::runtime::pulsar {

std::unique_ptr<producer_port> make_producer_port(nereus::client::producer p);

}  // namespace nereus::runtime::pulsar
