// CONNECT, LOOKUP, PARTITIONED_METADATA, GET_TOPICS_OF_NAMESPACE (connection handlers).

#include "nereus/broker/connection.h"
#include "nereus/broker/logger.h"
#include "nereus/broker/partitioned_topics.h"
#include "nereus/broker/topic_name.h"
#include "nereus/proto/errc.h"
#include "nereus/proto/protocol_version.h"
#include "nereus/proto/pulsar_api.h"

#include <boost/asio/post.hpp>

namespace nereus::broker {

namespace asio = boost::asio;

void connection::handle_connect(const proto::frame_view& f) {
    const auto& c = f.command().connect();
    peer_version_ = proto::negotiate_protocol_version(c.protocol_version());
    peer_partial_producer_ = c.has_feature_flags() && c.feature_flags().supports_partial_producer();
    writer_.set_peer_protocol_version(peer_version_);
    connected_ = true;
    proto::connected_args a;
    a.server_version = ctx_.options.server_version;
    a.protocol_version = peer_version_;
    a.max_message_size = static_cast<std::int32_t>(ctx_.options.max_message_size);
    write_frame([&](proto::frame_buffer& b) { return writer_.connected(b, a); });
    NEREUS_LOG(broker_log(), debug, "connected peer={} client={} protocol={}", peer_,
               c.client_version(), peer_version_);
}

void connection::handle_lookup(const proto::frame_view& f) {
    const auto& l = f.command().lookuptopic();
    const auto req = l.request_id();
    auto n = parse_topic_name(l.topic());
    if (!n) {
        write_frame([&](proto::frame_buffer& b) {
            return writer_.lookup_failed(b, req, proto::server_error::invalid_topic_name,
                                         "invalid topic name: " + l.topic());
        });
        return;
    }
    // Shared metadata: the topic's ownership node names its owner (doc/ownership.md); a topic
    // nobody owns is served here (the PRODUCER / SUBSCRIBE claims it). One metadata read on the
    // io thread, like PARTITIONED_METADATA.
    auto owner = ctx_.topics.backend().owner_of(n->full());
    if (!owner) {
        write_frame([&](proto::frame_buffer& b) {
            return writer_.lookup_failed(b, req, proto::server_error::service_not_ready,
                                         "ownership lookup failed: " + owner.error().message());
        });
        return;
    }
    if (!owner->here) {
        write_frame([&](proto::frame_buffer& b) {
            return writer_.lookup_redirect(b, req, owner->broker_url, {}, true);
        });
        return;
    }
    write_frame(
        [&](proto::frame_buffer& b) { return writer_.lookup_connect(b, req, ctx_.service_url); });
}

void connection::handle_partitioned_metadata(const proto::frame_view& f) {
    const auto& m = f.command().partitionmetadata();
    const auto req = m.request_id();
    auto n = parse_topic_name(m.topic());
    if (!n) {
        write_frame([&](proto::frame_buffer& b) {
            return writer_.partitioned_metadata_failed(b, req,
                                                       proto::server_error::invalid_topic_name,
                                                       "invalid topic name: " + m.topic());
        });
        return;
    }
    // N for a partitioned topic (metadata created through the admin API), 0 otherwise. One
    // blocking metadata read on the io thread (see doc/broker.md, "Threads and strands").
    auto count = partition_count(ctx_.topics.backend(), *n);
    if (!count) {
        write_frame([&](proto::frame_buffer& b) {
            return writer_.partitioned_metadata_failed(b, req, proto::server_error::metadata_error,
                                                       count.error().message());
        });
        return;
    }
    write_frame(
        [&](proto::frame_buffer& b) { return writer_.partitioned_metadata_ok(b, req, *count); });
}

void connection::handle_get_topics_of_namespace(const proto::frame_view& f) {
    const auto& g = f.command().gettopicsofnamespace();
    const auto req = g.request_id();
    const auto topics = ctx_.topics.topics_in_namespace(g.namespace_());
    write_frame([&](proto::frame_buffer& b) {
        return writer_.get_topics_of_namespace_response(b, req, topics);
    });
}

}  // namespace nereus::broker
