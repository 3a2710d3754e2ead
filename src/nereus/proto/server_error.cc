#include "nereus/proto/server_error.h"

#include "nereus/proto/errc.h"
#include "nereus/proto/pulsar_api.h"

#include <string>

namespace nereus::proto {

static_assert(static_cast<int>(server_error::unknown_error) == pb::UnknownError);
static_assert(static_cast<int>(server_error::checksum_error) == pb::ChecksumError);
static_assert(static_cast<int>(server_error::topic_not_found) == pb::TopicNotFound);
static_assert(static_cast<int>(server_error::invalid_topic_name) == pb::InvalidTopicName);
static_assert(static_cast<int>(server_error::not_allowed_error) == pb::NotAllowedError);
static_assert(static_cast<int>(server_error::producer_fenced) == pb::ProducerFenced);
static_assert(pb::ServerError_MAX == pb::ProducerFenced);

std::string_view to_string(server_error e) noexcept {
    const auto v = static_cast<int>(e);
    if (!pb::ServerError_IsValid(v)) {
        return "UnknownServerError";
    }
    // ServerError_Name returns a reference to a static string.
    return pb::ServerError_Name(static_cast<pb::ServerError>(v));
}

namespace {

class kind_category final : public std::error_category {
public:
    const char* name() const noexcept override { return "nereus.proto.kind"; }
    std::string message(int ev) const override {
        const auto e = static_cast<error_kind>(ev);
        if (e == error_kind::success) {
            return "success";
        }
        return std::string(to_string(to_server_error(make_error_code(e))));
    }
};

server_error map_kind(error_kind k) noexcept {
    switch (k) {
        case error_kind::success:
            return server_error::unknown_error;
        case error_kind::bad_request:
        case error_kind::metadata_failure:
            return server_error::metadata_error;
        case error_kind::persistence_failure:
            return server_error::persistence_error;
        case error_kind::not_authenticated:
            return server_error::authentication_error;
        case error_kind::not_authorized:
            return server_error::authorization_error;
        case error_kind::consumer_busy:
            return server_error::consumer_busy;
        case error_kind::unavailable:
            return server_error::service_not_ready;
        case error_kind::backlog_quota_hold:
            return server_error::producer_blocked_quota_exceeded_error;
        case error_kind::backlog_quota_exceeded:
            return server_error::producer_blocked_quota_exceeded_exception;
        case error_kind::checksum_mismatch:
            return server_error::checksum_error;
        case error_kind::unsupported_version:
            return server_error::unsupported_version_error;
        case error_kind::topic_not_found:
            return server_error::topic_not_found;
        case error_kind::subscription_not_found:
            return server_error::subscription_not_found;
        case error_kind::consumer_not_found:
            return server_error::consumer_not_found;
        case error_kind::too_many_requests:
            return server_error::too_many_requests;
        case error_kind::topic_terminated:
            return server_error::topic_terminated_error;
        case error_kind::producer_busy:
            return server_error::producer_busy;
        case error_kind::invalid_topic_name:
            return server_error::invalid_topic_name;
        case error_kind::incompatible_schema:
            return server_error::incompatible_schema;
        case error_kind::consumer_assign_failed:
            return server_error::consumer_assign_error;
        case error_kind::not_allowed:
            return server_error::not_allowed_error;
        case error_kind::producer_fenced:
            return server_error::producer_fenced;
        case error_kind::transactions_unsupported:
            return server_error::transaction_coordinator_not_found;
    }
    return server_error::unknown_error;
}

server_error map_proto(errc e) noexcept {
    switch (e) {
        case errc::checksum_mismatch:
            return server_error::checksum_error;
        case errc::frame_too_large:
        case errc::unsupported_compression:
            return server_error::not_allowed_error;
        case errc::unsupported_by_peer:
            return server_error::unsupported_version_error;
        case errc::frame_too_small:
        case errc::bad_command_size:
        case errc::bad_command:
        case errc::missing_command_body:
        case errc::bad_magic:
        case errc::truncated_section:
        case errc::bad_metadata_size:
        case errc::bad_metadata:
        case errc::missing_metadata:
        case errc::bad_batch:
        case errc::bad_compressed_payload:
        case errc::uncompressed_too_large:
        case errc::missing_required_field:
        case errc::invalid_argument:
            return server_error::metadata_error;
        case errc::success:
            break;
    }
    return server_error::unknown_error;
}

server_error map_generic(std::errc e) noexcept {
    switch (e) {
        case std::errc::io_error:
        case std::errc::no_space_on_device:
        case std::errc::read_only_file_system:
        case std::errc::file_too_large:
            return server_error::persistence_error;
        case std::errc::timed_out:
        case std::errc::resource_unavailable_try_again:
        case std::errc::operation_canceled:
        case std::errc::connection_aborted:
        case std::errc::connection_reset:
            return server_error::service_not_ready;
        case std::errc::permission_denied:
        case std::errc::operation_not_permitted:
            return server_error::authorization_error;
        case std::errc::invalid_argument:
            return server_error::metadata_error;
        case std::errc::not_supported:
        case std::errc::message_size:
            return server_error::not_allowed_error;
        default:
            return server_error::unknown_error;
    }
}

}  // namespace

const std::error_category& error_kind_category() noexcept {
    static const kind_category instance;
    return instance;
}

server_error to_server_error(const std::error_code& ec) noexcept {
    if (ec.category() == error_kind_category()) {
        return map_kind(static_cast<error_kind>(ec.value()));
    }
    if (ec.category() == proto_category()) {
        return map_proto(static_cast<errc>(ec.value()));
    }
    if (ec.category() == std::generic_category() || ec.category() == std::system_category()) {
        const auto condition = ec.default_error_condition();
        if (condition.category() == std::generic_category()) {
            return map_generic(static_cast<std::errc>(condition.value()));
        }
    }
    return server_error::unknown_error;
}

}  // namespace nereus::proto
