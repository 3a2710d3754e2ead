#pragma once

// Builders for every Pulsar command the broker sends (and those the project's own client
// sends), encoded straight into a caller's reusable frame_buffer (style R2: commands.{h,cc}).
//
// Arguments are plain values and views, so callers need no generated protobuf types. Each
// builder fills every field a stock client relies on (doc §3, §8): LOOKUP_RESPONSE always has
// `response`, PARTITIONED_METADATA_RESPONSE always has `response`, ERROR/SEND_ERROR always have
// a message, PING/PONG carry their empty sub-message, MESSAGE always carries 0x0e01 + CRC for
// peers >= v11 (pulsar-flex needs it) and never for older ones. Version gates are applied with
// options().peer_protocol_version (see protocol_version.h): a command the peer does not know is
// refused with errc::unsupported_by_peer, and fields it does not know are left out.
//
// Ownership: borrows arguments for the call; owns one scratch BaseCommand that it reuses.
// Thread-safety: thread-compatible; one writer per connection (strand-confined in the broker).

#include "nereus/base/result.h"
#include "nereus/proto/command_type.h"
#include "nereus/proto/frame_encoder.h"
#include "nereus/proto/server_error.h"

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>

namespace nereus::proto {

namespace pb {
class BaseCommand;
class MessageMetadata;
}  // namespace pb

// ledgerId/entryId -1 ("earliest" / "none", e.g. GET_LAST_MESSAGE_ID on an empty topic).
inline constexpr std::uint64_t no_position = ~std::uint64_t{0};

struct message_id {
    std::uint64_t ledger_id = 0;
    std::uint64_t entry_id = 0;
    std::int32_t partition = -1;    // sent only when != -1 (the default on the wire)
    std::int32_t batch_index = -1;  // sent only when != -1
    std::span<const std::int64_t> ack_set = {};
    std::int32_t batch_size = 0;  // sent only when > 0
};

struct key_value {
    std::string_view key;
    std::string_view value;
};

struct schema_info {
    std::string_view name;
    std::span<const std::byte> data;
    std::int32_t type = 0;  // Schema.Type wire value
    std::span<const key_value> properties = {};
};

// ---- broker → client arguments ----

struct connected_args {
    std::string_view server_version = "Nereus";
    std::int32_t protocol_version = 0;  // already negotiated (negotiate_protocol_version)
    std::optional<std::int32_t> max_message_size = default_max_message_size;
};

struct producer_success_args {
    std::uint64_t request_id = 0;
    std::string_view producer_name;
    std::int64_t last_sequence_id = -1;
    std::optional<std::span<const std::byte>> schema_version;
    std::optional<std::uint64_t> topic_epoch;
    bool producer_ready = true;  // false only for clients that set supports_partial_producer
};

struct consumer_stats_args {
    std::uint64_t request_id = 0;
    double msg_rate_out = 0;
    double msg_throughput_out = 0;
    double msg_rate_redeliver = 0;
    std::string_view consumer_name;
    std::uint64_t available_permits = 0;
    std::uint64_t unacked_messages = 0;
    bool blocked_consumer_on_unacked_msgs = false;
    std::string_view address;
    std::string_view connected_since;
    std::string_view type;  // "Exclusive", "Shared", "Failover", "Key_Shared"
    double msg_rate_expired = 0;
    std::uint64_t msg_backlog = 0;
};

// ---- client → broker arguments ----

struct connect_args {
    std::string_view client_version = "Nereus-Client";
    std::int32_t protocol_version = nereus_protocol_version;
    std::string_view auth_method_name = "none";
    std::span<const std::byte> auth_data = {};
    bool supports_auth_refresh = false;
    bool supports_broker_entry_metadata = false;
    bool supports_partial_producer = false;
};

struct producer_args {
    std::string_view topic;
    std::uint64_t producer_id = 0;
    std::uint64_t request_id = 0;
    std::optional<std::string_view> producer_name;  // absent: the broker generates one
    std::int32_t access_mode = 0;                   // ProducerAccessMode: Shared
    std::uint64_t epoch = 0;
    std::span<const key_value> metadata = {};
    const schema_info* schema = nullptr;
};

struct send_args {
    std::uint64_t producer_id = 0;
    std::uint64_t sequence_id = 0;
    std::int32_t num_messages = 1;
    std::optional<std::uint64_t> highest_sequence_id;
};

struct subscribe_args {
    std::string_view topic;
    std::string_view subscription;
    std::int32_t sub_type = 0;  // Exclusive 0, Shared 1, Failover 2, Key_Shared 3
    std::uint64_t consumer_id = 0;
    std::uint64_t request_id = 0;
    std::string_view consumer_name;
    std::int32_t priority_level = 0;
    bool durable = true;
    std::optional<message_id> start_message_id;
    bool read_compacted = false;
    std::int32_t initial_position = 0;  // Latest 0, Earliest 1
    std::span<const key_value> metadata = {};
    std::span<const key_value> subscription_properties = {};
    const schema_info* schema = nullptr;  // AutoConsume is dropped for brokers below v21
};

struct ack_args {
    std::uint64_t consumer_id = 0;
    bool cumulative = false;
    std::span<const message_id> ids;
    std::optional<std::int32_t> validation_error;  // CommandAck.ValidationError
    std::optional<std::uint64_t> request_id;       // ask for ACK_RESPONSE
};

class command_writer {
public:
    explicit command_writer(encode_options options = {});
    ~command_writer();
    command_writer(command_writer&&) noexcept;
    command_writer& operator=(command_writer&&) noexcept;
    command_writer(const command_writer&) = delete;
    command_writer& operator=(const command_writer&) = delete;

    encode_options& options() noexcept { return options_; }
    void set_peer_protocol_version(std::int32_t v) noexcept { options_.peer_protocol_version = v; }

    using written = result<std::size_t>;  // frame bytes appended

    // ---- broker → client ----
    [[nodiscard]] written connected(frame_buffer& out, const connected_args& a);
    [[nodiscard]] written ping(frame_buffer& out);
    [[nodiscard]] written pong(frame_buffer& out);
    // LOOKUP_RESPONSE {response=Connect, brokerServiceUrl, [brokerServiceUrlTls], authoritative}
    [[nodiscard]] written lookup_connect(frame_buffer& out,
                                         std::uint64_t request_id,
                                         std::string_view broker_url,
                                         std::string_view broker_url_tls = {},
                                         bool authoritative = true);
    [[nodiscard]] written lookup_redirect(frame_buffer& out,
                                          std::uint64_t request_id,
                                          std::string_view broker_url,
                                          std::string_view broker_url_tls = {},
                                          bool authoritative = false);
    [[nodiscard]] written lookup_failed(frame_buffer& out,
                                        std::uint64_t request_id,
                                        server_error error,
                                        std::string_view message);
    [[nodiscard]] written partitioned_metadata_ok(frame_buffer& out,
                                                  std::uint64_t request_id,
                                                  std::uint32_t partitions);
    [[nodiscard]] written partitioned_metadata_failed(frame_buffer& out,
                                                      std::uint64_t request_id,
                                                      server_error error,
                                                      std::string_view message);
    [[nodiscard]] written producer_success(frame_buffer& out, const producer_success_args& a);
    [[nodiscard]] written send_receipt(frame_buffer& out,
                                       std::uint64_t producer_id,
                                       std::uint64_t sequence_id,
                                       std::uint64_t highest_sequence_id,
                                       const message_id& id);
    // The same frame through the generic protobuf path (send_receipt() encodes the common
    // case directly; tests compare the two).
    [[nodiscard]] written send_receipt_generic(frame_buffer& out,
                                               std::uint64_t producer_id,
                                               std::uint64_t sequence_id,
                                               std::uint64_t highest_sequence_id,
                                               const message_id& id);
    [[nodiscard]] written send_error(frame_buffer& out,
                                     std::uint64_t producer_id,
                                     std::uint64_t sequence_id,
                                     server_error error,
                                     std::string_view message);
    [[nodiscard]] written success(frame_buffer& out, std::uint64_t request_id);
    [[nodiscard]] written error_response(frame_buffer& out,
                                         std::uint64_t request_id,
                                         server_error error,
                                         std::string_view message);
    // Both directions; broker-initiated ones use request_id -1 (and need peer >= v5).
    [[nodiscard]] written close_producer(frame_buffer& out,
                                         std::uint64_t producer_id,
                                         std::uint64_t request_id = broker_initiated_request_id);
    [[nodiscard]] written close_consumer(frame_buffer& out,
                                         std::uint64_t consumer_id,
                                         std::uint64_t request_id = broker_initiated_request_id);
    // MESSAGE + stored headers_and_payload (frame_view::headers_and_payload kept verbatim).
    // Checksum: ensured for peers >= v11, stripped below (options().checksum is not used).
    [[nodiscard]] written message(frame_buffer& out,
                                  std::uint64_t consumer_id,
                                  const message_id& id,
                                  std::uint32_t redelivery_count,
                                  std::span<const std::int64_t> ack_set,
                                  std::span<const std::byte> stored);
    // The same frame through the generic protobuf path (message() encodes the broker's
    // common case directly; tests compare the two).
    [[nodiscard]] written message_generic(frame_buffer& out,
                                          std::uint64_t consumer_id,
                                          const message_id& id,
                                          std::uint32_t redelivery_count,
                                          std::span<const std::int64_t> ack_set,
                                          std::span<const std::byte> stored);
    [[nodiscard]] written ack_response(frame_buffer& out,
                                       std::uint64_t consumer_id,
                                       std::uint64_t request_id,
                                       std::optional<server_error> error = std::nullopt,
                                       std::string_view message = {});
    [[nodiscard]] written get_last_message_id_response(
        frame_buffer& out,
        std::uint64_t request_id,
        const message_id& last,
        const std::optional<message_id>& mark_delete_position);
    [[nodiscard]] written get_topics_of_namespace_response(frame_buffer& out,
                                                           std::uint64_t request_id,
                                                           std::span<const std::string> topics);
    // A broker without a schema registry: error_code TopicNotFound (C++ quietly fails the
    // lookup only for that code; doc §3.2).
    [[nodiscard]] written get_schema_response_error(
        frame_buffer& out,
        std::uint64_t request_id,
        server_error error = server_error::topic_not_found,
        std::string_view message = "Topic has no schema");
    [[nodiscard]] written get_or_create_schema_response(frame_buffer& out,
                                                        std::uint64_t request_id,
                                                        std::span<const std::byte> schema_version,
                                                        std::optional<server_error> error = {},
                                                        std::string_view message = {});
    [[nodiscard]] written consumer_stats_response(frame_buffer& out, const consumer_stats_args& a);
    [[nodiscard]] written consumer_stats_error(frame_buffer& out,
                                               std::uint64_t request_id,
                                               server_error error,
                                               std::string_view message);
    [[nodiscard]] written active_consumer_change(frame_buffer& out,
                                                 std::uint64_t consumer_id,
                                                 bool is_active);
    // Needs v9; the C++ client (all versions) closes its connection on it: the broker decides.
    [[nodiscard]] written reached_end_of_topic(frame_buffer& out, std::uint64_t consumer_id);
    [[nodiscard]] written tc_client_connect_response(frame_buffer& out,
                                                     std::uint64_t request_id,
                                                     server_error error,
                                                     std::string_view message);

    // ---- client → broker ----
    [[nodiscard]] written connect(frame_buffer& out, const connect_args& a);
    [[nodiscard]] written partitioned_metadata(frame_buffer& out,
                                               std::string_view topic,
                                               std::uint64_t request_id);
    [[nodiscard]] written lookup(frame_buffer& out,
                                 std::string_view topic,
                                 std::uint64_t request_id,
                                 bool authoritative = false,
                                 std::string_view advertised_listener_name = {});
    [[nodiscard]] written producer(frame_buffer& out, const producer_args& a);
    // SEND with checksum for brokers >= v6 (none below).
    [[nodiscard]] written send(frame_buffer& out,
                               const send_args& a,
                               const pb::MessageMetadata& metadata,
                               std::span<const std::byte> payload);
    [[nodiscard]] written subscribe(frame_buffer& out, const subscribe_args& a);
    [[nodiscard]] written flow(frame_buffer& out, std::uint64_t consumer_id, std::uint32_t permits);
    // Ids of ledger, entry and partition only (a consumer's acks) are encoded directly.
    [[nodiscard]] written ack(frame_buffer& out, const ack_args& a);
    // The same frame through the generic protobuf path (tests compare the two).
    [[nodiscard]] written ack_generic(frame_buffer& out, const ack_args& a);
    [[nodiscard]] written unsubscribe(frame_buffer& out,
                                      std::uint64_t consumer_id,
                                      std::uint64_t request_id);
    [[nodiscard]] written seek(frame_buffer& out,
                               std::uint64_t consumer_id,
                               std::uint64_t request_id,
                               const message_id& id);
    [[nodiscard]] written seek_by_time(frame_buffer& out,
                                       std::uint64_t consumer_id,
                                       std::uint64_t request_id,
                                       std::uint64_t publish_time_ms);
    [[nodiscard]] written redeliver_unacknowledged(frame_buffer& out,
                                                   std::uint64_t consumer_id,
                                                   std::span<const message_id> ids);
    [[nodiscard]] written get_last_message_id(frame_buffer& out,
                                              std::uint64_t consumer_id,
                                              std::uint64_t request_id);
    [[nodiscard]] written get_topics_of_namespace(frame_buffer& out,
                                                  std::uint64_t request_id,
                                                  std::string_view ns,
                                                  std::int32_t mode = 0);
    [[nodiscard]] written get_schema(frame_buffer& out,
                                     std::uint64_t request_id,
                                     std::string_view topic);
    [[nodiscard]] written consumer_stats(frame_buffer& out,
                                         std::uint64_t request_id,
                                         std::uint64_t consumer_id);

    // Escape hatch for commands without a builder: reset the scratch command to type `t` (its
    // sub-message created), fill it through pulsar_api.h, then write_scratch().
    pb::BaseCommand& scratch(command_type t);
    [[nodiscard]] written write_scratch(frame_buffer& out);

private:
    std::unique_ptr<pb::BaseCommand> cmd_;
    encode_options options_;
};

}  // namespace nereus::proto
