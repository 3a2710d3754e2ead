#pragma once

// Pulsar batch payloads (doc §4.3): a batch entry's (decompressed) payload is
// num_messages_in_batch repetitions of
//     [singleMetadataSize u32 BE][SingleMessageMetadata][payload (payload_size bytes)]
// with no count prefix and no padding. A MessageMetadata with num_messages_in_batch SET marks
// a batch (clients test has_num_messages_in_batch()).
//
// batch_reader walks a batch as views into the payload; batch_builder appends entries to a
// reusable buffer. The broker itself never needs to open a batch.
// Ownership: the reader views the caller's payload; metadata() points into the reader.
// Thread-safety: thread-compatible.

#include "nereus/base/result.h"

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <vector>

namespace nereus::proto {

namespace pb {
class SingleMessageMetadata;
}  // namespace pb

class batch_reader {
public:
    batch_reader();
    ~batch_reader();
    batch_reader(batch_reader&&) noexcept;
    batch_reader& operator=(batch_reader&&) noexcept;
    batch_reader(const batch_reader&) = delete;
    batch_reader& operator=(const batch_reader&) = delete;

    // Starts reading `payload` holding `num_messages` entries. Reuses the metadata message.
    void reset(std::span<const std::byte> payload, std::int32_t num_messages);

    // Decodes the next entry: true when one is available, false after the last one.
    // errc::bad_batch when sizes run past the payload, the metadata does not parse, a
    // payload_size is negative, or bytes remain after num_messages entries.
    [[nodiscard]] result<bool> next();

    // The current entry (after next() returned true).
    std::int32_t index() const noexcept { return index_; }
    const pb::SingleMessageMetadata& metadata() const noexcept { return *metadata_; }
    std::span<const std::byte> payload() const noexcept { return payload_; }

private:
    std::unique_ptr<pb::SingleMessageMetadata> metadata_;
    std::span<const std::byte> rest_;
    std::span<const std::byte> payload_;
    std::int32_t count_ = 0;
    std::int32_t index_ = -1;
};

// Appends batch entries into `out` (the caller's reusable buffer).
class batch_builder {
public:
    explicit batch_builder(std::vector<std::byte>& out) : out_(out) {}

    // Appends one entry; sets metadata.payload_size from `payload`.
    [[nodiscard]] result<void> add(pb::SingleMessageMetadata& metadata,
                                   std::span<const std::byte> payload);

    // Number of entries appended so far (MessageMetadata.num_messages_in_batch).
    std::int32_t count() const noexcept { return count_; }

private:
    std::vector<std::byte>& out_;
    std::int32_t count_ = 0;
};

}  // namespace nereus::proto
