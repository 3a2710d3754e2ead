#pragma once

// Helpers of the compaction tests: stored entries (headers_and_payload) built the way a
// producer sends them, keyed single messages and batches, and decoding what a consumer got
// back into (key, value) messages.

#include "nereus/base/crc32c.h"
#include "nereus/proto/batch_codec.h"
#include "nereus/proto/frame_format.h"
#include "nereus/proto/pulsar_api.h"

#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace nereus::broker::test {

struct kv {
    std::optional<std::string> key;  // nullopt: no partition_key
    std::string value;               // "" is a tombstone
    friend bool operator==(const kv&, const kv&) = default;
};

inline std::vector<std::byte> stored_bytes(const proto::pb::MessageMetadata& md,
                                           std::span<const std::byte> payload) {
    const auto n = md.ByteSizeLong();
    std::vector<std::byte> out(proto::checksum_section_bytes + 4 + n + payload.size());
    proto::detail::store_be16(out.data(), proto::magic_crc32c);
    proto::detail::store_be32(out.data() + proto::checksum_section_bytes,
                              static_cast<std::uint32_t>(n));
    md.SerializeToArray(out.data() + proto::checksum_section_bytes + 4, static_cast<int>(n));
    std::copy(payload.begin(), payload.end(),
              out.begin() + static_cast<std::ptrdiff_t>(proto::checksum_section_bytes + 4 + n));
    const auto body = std::span<const std::byte>(out).subspan(proto::checksum_section_bytes);
    proto::detail::store_be32(out.data() + proto::magic_bytes, crc32c::value(body));
    return out;
}

inline std::span<const std::byte> bytes_of(const std::string& s) {
    return std::as_bytes(std::span(s.data(), s.size()));
}

// One single message.
inline std::shared_ptr<const std::vector<std::byte>> single(const kv& m, std::uint64_t seq = 0) {
    proto::pb::MessageMetadata md;
    md.set_producer_name("t");
    md.set_sequence_id(seq);
    md.set_publish_time(1000 + seq);
    if (m.key) {
        md.set_partition_key(*m.key);
    }
    return std::make_shared<const std::vector<std::byte>>(stored_bytes(md, bytes_of(m.value)));
}

// One batch of messages.
inline std::shared_ptr<const std::vector<std::byte>> batch(const std::vector<kv>& ms,
                                                           std::uint64_t seq = 0) {
    std::vector<std::byte> payload;
    proto::batch_builder b(payload);
    for (const auto& m : ms) {
        proto::pb::SingleMessageMetadata sm;
        if (m.key) {
            sm.set_partition_key(*m.key);
        }
        (void)b.add(sm, bytes_of(m.value));
    }
    proto::pb::MessageMetadata md;
    md.set_producer_name("t");
    md.set_sequence_id(seq);
    md.set_publish_time(1000 + seq);
    md.set_num_messages_in_batch(b.count());
    return std::make_shared<const std::vector<std::byte>>(stored_bytes(md, payload));
}

// The messages of a stored entry (a batch split), empty if it does not parse.
inline std::vector<kv> messages_of(const std::vector<std::byte>& stored) {
    std::vector<kv> out;
    std::size_t at = 0;
    if (stored.size() >= 2 && proto::detail::load_be16(stored.data()) == proto::magic_crc32c) {
        at = proto::checksum_section_bytes;
    }
    if (stored.size() < at + 4) {
        return out;
    }
    const auto n = proto::detail::load_be32(stored.data() + at);
    at += 4;
    proto::pb::MessageMetadata md;
    if (stored.size() - at < n || !md.ParseFromArray(stored.data() + at, static_cast<int>(n))) {
        return out;
    }
    at += n;
    const auto payload = std::span<const std::byte>(stored).subspan(at);
    auto text = [](std::span<const std::byte> p) {
        return std::string(reinterpret_cast<const char*>(p.data()), p.size());
    };
    if (!md.has_num_messages_in_batch()) {
        out.push_back(kv{md.has_partition_key() ? std::optional(md.partition_key()) : std::nullopt,
                         text(payload)});
        return out;
    }
    proto::batch_reader r;
    r.reset(payload, md.num_messages_in_batch());
    for (;;) {
        auto more = r.next();
        if (!more || !*more) {
            break;
        }
        const auto& sm = r.metadata();
        out.push_back(kv{sm.has_partition_key() ? std::optional(sm.partition_key()) : std::nullopt,
                         text(r.payload())});
    }
    return out;
}

}  // namespace nereus::broker::test
