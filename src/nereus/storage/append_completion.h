#pragma once

// append_completion: the callback an append fires once its entry is durable (or failed).
//
// base/completion.h's inline_completion with 144 bytes of inline storage: room for the managed
// ledger's completion (its ledger, the broker's inline callback, publish time and size), so
// enqueuing an append costs no heap allocation (style R7). A larger callable would be boxed on
// the heap; the hot-path caller (managed_ledger::append) static_asserts `fits_inline` so that
// never happens there silently.
// Thread-safety: thread-compatible.

#include "nereus/base/completion.h"
#include "nereus/base/result.h"
#include "nereus/storage/types.h"

namespace nereus::storage {

using append_completion = inline_completion<void(result<offset>), 144>;

}  // namespace nereus::storage
