#include "nereus/proto/frame_encoder.h"

#include "nereus/base/crc32c.h"
#include "nereus/proto/errc.h"
#include "nereus/proto/pulsar_api.h"

#include <cstring>

namespace nereus::proto {

using detail::load_be16;
using detail::store_be16;
using detail::store_be32;

namespace {

// Strict sending: a type, its sub-message, every required field, and a peer that knows it.
result<void> check_command(const pb::BaseCommand& command, const encode_options& options) {
    if (!command.has_type()) {
        return error(errc::missing_required_field);
    }
    const auto type = static_cast<command_type>(command.type());
    if (!has_body(command, type) || !command.IsInitialized()) {
        return error(errc::missing_required_field);
    }
    if (!peer_knows(type, options.peer_protocol_version)) {
        return error(errc::unsupported_by_peer);
    }
    return {};
}

// Grows `out` by `n` bytes and returns a pointer to them.
std::byte* grow(frame_buffer& out, std::size_t n) {
    const std::size_t old = out.size();
    out.resize(old + n);
    return out.data() + old;
}

// Writes [totalSize][commandSize][BaseCommand] at `p`; returns the position after it.
std::byte* write_head(std::byte* p,
                      std::uint32_t total_size,
                      const pb::BaseCommand& command,
                      std::uint32_t command_size) {
    store_be32(p, total_size);
    store_be32(p + 4, command_size);
    p += simple_frame_overhead;
    command.SerializeWithCachedSizesToArray(reinterpret_cast<std::uint8_t*>(p));
    return p + command_size;
}

// Writes [0x0e01 crc]?[metadataSize][metadata][payload] at `p`; returns the position after it.
// Requires: metadata.ByteSizeLong() was called (cached size == metadata_size).
std::byte* write_section(std::byte* p,
                         const pb::MessageMetadata& metadata,
                         std::uint32_t metadata_size,
                         std::span<const std::byte> payload,
                         bool with_checksum) {
    std::byte* crc_field = nullptr;
    if (with_checksum) {
        store_be16(p, magic_crc32c);
        crc_field = p + magic_bytes;
        p += checksum_section_bytes;
    }
    std::byte* const covered = p;
    store_be32(p, metadata_size);
    p += size_field_bytes;
    metadata.SerializeWithCachedSizesToArray(reinterpret_cast<std::uint8_t*>(p));
    p += metadata_size;
    if (!payload.empty()) {
        std::memcpy(p, payload.data(), payload.size());
        p += payload.size();
    }
    if (crc_field != nullptr) {
        store_be32(crc_field, crc32c::value(covered, static_cast<std::size_t>(p - covered)));
    }
    return p;
}

result<std::uint32_t> checked_total(std::uint64_t total_size, const encode_options& options) {
    if (total_size + size_field_bytes > options.max_frame_size) {
        return error(errc::frame_too_large);
    }
    return static_cast<std::uint32_t>(total_size);
}

}  // namespace

result<std::size_t> append_simple_frame(frame_buffer& out,
                                        const pb::BaseCommand& command,
                                        const encode_options& options) {
    NEREUS_TRY(check_command(command, options));
    const auto command_size = static_cast<std::uint32_t>(command.ByteSizeLong());
    auto total = checked_total(std::uint64_t{command_size} + size_field_bytes, options);
    if (!total) {
        return error(total.error());
    }
    std::byte* p = grow(out, *total + size_field_bytes);
    write_head(p, *total, command, command_size);
    return *total + size_field_bytes;
}

result<std::size_t> append_payload_frame(frame_buffer& out,
                                         const pb::BaseCommand& command,
                                         const pb::MessageMetadata& metadata,
                                         std::span<const std::byte> payload,
                                         const encode_options& options) {
    NEREUS_TRY(check_command(command, options));
    if (!metadata.IsInitialized()) {
        return error(errc::missing_required_field);
    }
    const bool with_checksum = options.checksum != checksum_policy::strip;
    const auto command_size = static_cast<std::uint32_t>(command.ByteSizeLong());
    const auto metadata_size = static_cast<std::uint64_t>(metadata.ByteSizeLong());
    const std::uint64_t section = (with_checksum ? checksum_section_bytes : 0) + size_field_bytes +
                                  metadata_size + payload.size();
    auto total = checked_total(size_field_bytes + std::uint64_t{command_size} + section, options);
    if (!total) {
        return error(total.error());
    }
    std::byte* p = grow(out, *total + size_field_bytes);
    p = write_head(p, *total, command, command_size);
    write_section(p, metadata, static_cast<std::uint32_t>(metadata_size), payload, with_checksum);
    return *total + size_field_bytes;
}

result<std::size_t> append_stored_payload_frame(frame_buffer& out,
                                                const pb::BaseCommand& command,
                                                std::span<const std::byte> stored,
                                                const encode_options& options) {
    NEREUS_TRY(check_command(command, options));
    if (stored.size() >= magic_bytes && load_be16(stored.data()) == magic_broker_entry_metadata) {
        return error(errc::invalid_argument);
    }
    const bool stored_has_checksum =
        stored.size() >= checksum_section_bytes && load_be16(stored.data()) == magic_crc32c;
    if (stored.size() < (stored_has_checksum ? checksum_section_bytes : 0) + size_field_bytes) {
        return error(errc::invalid_argument);  // not a headers_and_payload: no metadataSize
    }
    std::span<const std::byte> body = stored;  // what we copy after our own sections
    bool add_checksum = false;
    switch (options.checksum) {
        case checksum_policy::keep:
            break;
        case checksum_policy::ensure:
            add_checksum = !stored_has_checksum;
            break;
        case checksum_policy::strip:
            if (stored_has_checksum) {
                body = stored.subspan(checksum_section_bytes);
            }
            break;
    }
    std::uint64_t bem_size = 0;
    if (options.broker_entry_metadata != nullptr) {
        bem_size = options.broker_entry_metadata->ByteSizeLong();
    }
    const auto command_size = static_cast<std::uint32_t>(command.ByteSizeLong());
    const std::uint64_t section =
        (options.broker_entry_metadata != nullptr ? magic_bytes + size_field_bytes + bem_size : 0) +
        (add_checksum ? checksum_section_bytes : 0) + body.size();
    auto total = checked_total(size_field_bytes + std::uint64_t{command_size} + section, options);
    if (!total) {
        return error(total.error());
    }
    std::byte* p = grow(out, *total + size_field_bytes);
    p = write_head(p, *total, command, command_size);
    if (options.broker_entry_metadata != nullptr) {
        store_be16(p, magic_broker_entry_metadata);
        store_be32(p + magic_bytes, static_cast<std::uint32_t>(bem_size));
        p += magic_bytes + size_field_bytes;
        options.broker_entry_metadata->SerializeWithCachedSizesToArray(
            reinterpret_cast<std::uint8_t*>(p));
        p += bem_size;
    }
    if (add_checksum) {
        store_be16(p, magic_crc32c);
        store_be32(p + magic_bytes, crc32c::value(body));
        p += checksum_section_bytes;
    }
    std::memcpy(p, body.data(), body.size());
    return *total + size_field_bytes;
}

result<std::size_t> append_headers_and_payload(frame_buffer& out,
                                               const pb::MessageMetadata& metadata,
                                               std::span<const std::byte> payload,
                                               bool with_checksum) {
    if (!metadata.IsInitialized()) {
        return error(errc::missing_required_field);
    }
    const auto metadata_size = static_cast<std::uint64_t>(metadata.ByteSizeLong());
    const std::uint64_t n = (with_checksum ? checksum_section_bytes : 0) + size_field_bytes +
                            metadata_size + payload.size();
    if (metadata_size > UINT32_MAX || n > UINT32_MAX) {
        return error(errc::frame_too_large);
    }
    std::byte* p = grow(out, static_cast<std::size_t>(n));
    write_section(p, metadata, static_cast<std::uint32_t>(metadata_size), payload, with_checksum);
    return static_cast<std::size_t>(n);
}

}  // namespace nereus::proto
