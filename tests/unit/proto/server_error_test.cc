// Table test of the one internal-error → ServerError mapping (style R4).

#include "nereus/proto/server_error.h"

#include "nereus/proto/errc.h"
#include "nereus/proto/pulsar_api.h"

#include <gtest/gtest.h>

#include <future>

namespace nereus::proto {
namespace {

struct row {
    std::error_code code;
    server_error expected;
};

TEST(ServerErrorMapping, Table) {
    const row table[] = {
        {error_kind::bad_request, server_error::metadata_error},
        {error_kind::metadata_failure, server_error::metadata_error},
        {error_kind::persistence_failure, server_error::persistence_error},
        {error_kind::not_authenticated, server_error::authentication_error},
        {error_kind::not_authorized, server_error::authorization_error},
        {error_kind::consumer_busy, server_error::consumer_busy},
        {error_kind::unavailable, server_error::service_not_ready},
        {error_kind::backlog_quota_hold, server_error::producer_blocked_quota_exceeded_error},
        {error_kind::backlog_quota_exceeded,
         server_error::producer_blocked_quota_exceeded_exception},
        {error_kind::checksum_mismatch, server_error::checksum_error},
        {error_kind::unsupported_version, server_error::unsupported_version_error},
        {error_kind::topic_not_found, server_error::topic_not_found},
        {error_kind::subscription_not_found, server_error::subscription_not_found},
        {error_kind::consumer_not_found, server_error::consumer_not_found},
        {error_kind::too_many_requests, server_error::too_many_requests},
        {error_kind::topic_terminated, server_error::topic_terminated_error},
        {error_kind::producer_busy, server_error::producer_busy},
        {error_kind::invalid_topic_name, server_error::invalid_topic_name},
        {error_kind::incompatible_schema, server_error::incompatible_schema},
        {error_kind::consumer_assign_failed, server_error::consumer_assign_error},
        {error_kind::not_allowed, server_error::not_allowed_error},
        {error_kind::producer_fenced, server_error::producer_fenced},
        {error_kind::transactions_unsupported, server_error::transaction_coordinator_not_found},
        // This module's codes.
        {errc::checksum_mismatch, server_error::checksum_error},
        {errc::frame_too_large, server_error::not_allowed_error},
        {errc::unsupported_compression, server_error::not_allowed_error},
        {errc::unsupported_by_peer, server_error::unsupported_version_error},
        {errc::bad_metadata, server_error::metadata_error},
        {errc::bad_command, server_error::metadata_error},
        {errc::bad_batch, server_error::metadata_error},
        // Generic and system codes.
        {std::make_error_code(std::errc::io_error), server_error::persistence_error},
        {std::make_error_code(std::errc::no_space_on_device), server_error::persistence_error},
        {std::error_code(EIO, std::system_category()), server_error::persistence_error},
        {std::make_error_code(std::errc::timed_out), server_error::service_not_ready},
        {std::make_error_code(std::errc::permission_denied), server_error::authorization_error},
        {std::make_error_code(std::errc::message_size), server_error::not_allowed_error},
        {std::make_error_code(std::errc::bad_address), server_error::unknown_error},
        // Anything unknown.
        {std::make_error_code(std::future_errc::broken_promise), server_error::unknown_error},
        {std::error_code(), server_error::unknown_error},
    };
    for (const auto& r : table) {
        EXPECT_EQ(to_server_error(r.code), r.expected)
            << r.code.category().name() << ":" << r.code.message();
    }
}

TEST(ServerErrorMapping, EveryErrcAndKindIsMapped) {
    for (int v = 1; v <= static_cast<int>(errc::invalid_argument); ++v) {
        EXPECT_NE(to_server_error(static_cast<errc>(v)), server_error::unknown_error) << v;
        EXPECT_NE(make_error_code(static_cast<errc>(v)).message().rfind("unknown", 0), 0u) << v;
    }
    for (int v = 1; v <= static_cast<int>(error_kind::transactions_unsupported); ++v) {
        EXPECT_NE(to_server_error(static_cast<error_kind>(v)), server_error::unknown_error) << v;
    }
}

TEST(ServerErrorMapping, NamesAndWireValues) {
    EXPECT_EQ(to_string(server_error::checksum_error), "ChecksumError");
    EXPECT_EQ(to_string(server_error::producer_fenced), "ProducerFenced");
    EXPECT_EQ(to_string(static_cast<server_error>(99)), "UnknownServerError");
    for (int v = 0; v <= 25; ++v) {
        EXPECT_TRUE(pb::ServerError_IsValid(v));
        EXPECT_EQ(to_string(static_cast<server_error>(v)),
                  pb::ServerError_Name(static_cast<pb::ServerError>(v)));
    }
    EXPECT_EQ(make_error_code(error_kind::topic_not_found).message(), "TopicNotFound");
}

}  // namespace
}  // namespace nereus::proto
