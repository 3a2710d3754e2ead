#include "support/wire_client.h"

#include <arpa/inet.h>
#include <cerrno>
#include <cstring>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

namespace nereus::broker::test {

std::unique_ptr<wire_client> wire_client::open(std::uint16_t port) {
    const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0) {
        return nullptr;
    }
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_port = htons(port);
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (::connect(fd, reinterpret_cast<const sockaddr*>(&a), sizeof a) != 0) {
        ::close(fd);
        return nullptr;
    }
    int one = 1;
    ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    return std::unique_ptr<wire_client>(new wire_client(fd));
}

wire_client::wire_client(int fd) : fd_(fd) {}

wire_client::~wire_client() {
    if (fd_ >= 0) {
        ::close(fd_);
    }
}

bool wire_client::send_raw(std::span<const std::byte> bytes) {
    std::size_t done = 0;
    while (done < bytes.size()) {
        const auto n = ::send(fd_, bytes.data() + done, bytes.size() - done, MSG_NOSIGNAL);
        if (n < 0) {
            if (errno == EINTR) {
                continue;
            }
            return false;
        }
        done += static_cast<std::size_t>(n);
    }
    return true;
}

bool wire_client::send_text(std::string_view s) {
    return send_raw(std::as_bytes(std::span(s.data(), s.size())));
}

std::optional<received> wire_client::handshake(std::int32_t protocol_version) {
    proto::connect_args a;
    a.client_version = "nereus-broker-test";
    a.protocol_version = protocol_version;
    if (!send([&](proto::frame_buffer& b) { return writer_.connect(b, a).has_value(); })) {
        return std::nullopt;
    }
    auto r = expect(proto::command_type::connected);
    if (r) {
        writer_.set_peer_protocol_version(r->cmd.connected().protocol_version());
    }
    return r;
}

bool wire_client::send_message(std::uint64_t producer_id,
                               std::uint64_t sequence_id,
                               std::string_view payload,
                               std::int32_t batch,
                               std::string_view key) {
    proto::pb::MessageMetadata md;
    md.set_producer_name("test");
    md.set_sequence_id(sequence_id);
    md.set_publish_time(1'700'000'000'000ULL + sequence_id);
    if (batch > 0) {
        md.set_num_messages_in_batch(batch);
    }
    if (!key.empty()) {
        md.set_partition_key(std::string(key));
    }
    proto::send_args s;
    s.producer_id = producer_id;
    s.sequence_id = sequence_id;
    s.num_messages = batch > 0 ? batch : 1;
    const auto bytes = std::as_bytes(std::span(payload.data(), payload.size()));
    return send([&](proto::frame_buffer& b) { return writer_.send(b, s, md, bytes).has_value(); });
}

std::optional<received> wire_client::read_frame(std::chrono::milliseconds timeout) {
    const auto until = std::chrono::steady_clock::now() + timeout;
    for (;;) {
        if (!buf_.empty()) {
            auto step = decoder_.decode(buf_);
            if (!step) {
                eof_ = true;
                return std::nullopt;
            }
            if (step->complete) {
                const auto& f = step->frame;
                received r;
                r.raw_type = f.raw_type;
                r.type = f.type();
                r.cmd = f.command();
                if (f.has_payload_section) {
                    r.stored.assign(f.headers_and_payload.begin(), f.headers_and_payload.end());
                    r.payload.assign(reinterpret_cast<const char*>(f.payload.data()),
                                     f.payload.size());
                }
                buf_.erase(buf_.begin(), buf_.begin() + static_cast<std::ptrdiff_t>(f.size));
                return r;
            }
        }
        if (eof_) {
            return std::nullopt;
        }
        const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
            until - std::chrono::steady_clock::now());
        if (left.count() <= 0) {
            return std::nullopt;
        }
        pollfd p{fd_, POLLIN, 0};
        const int pr = ::poll(&p, 1, static_cast<int>(left.count()));
        if (pr <= 0) {
            if (pr < 0 && errno == EINTR) {
                continue;
            }
            return std::nullopt;
        }
        std::byte tmp[65536];
        const auto n = ::recv(fd_, tmp, sizeof tmp, 0);
        if (n <= 0) {
            if (n < 0 && errno == EINTR) {
                continue;
            }
            eof_ = true;
            continue;
        }
        buf_.insert(buf_.end(), tmp, tmp + n);
    }
}

std::optional<received> wire_client::next(std::chrono::milliseconds timeout) {
    if (!held_.empty()) {
        auto r = std::move(held_.front());
        held_.pop_front();
        return r;
    }
    return read_frame(timeout);
}

std::optional<received> wire_client::expect(proto::command_type t,
                                            std::chrono::milliseconds timeout) {
    for (auto it = held_.begin(); it != held_.end(); ++it) {
        if (it->type == t) {
            auto r = std::move(*it);
            held_.erase(it);
            return r;
        }
    }
    const auto until = std::chrono::steady_clock::now() + timeout;
    for (;;) {
        const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
            until - std::chrono::steady_clock::now());
        if (left.count() <= 0) {
            return std::nullopt;
        }
        auto r = read_frame(left);
        if (!r) {
            return std::nullopt;
        }
        if (r->type == t) {
            return r;
        }
        if (r->type == proto::command_type::ping) {
            send([&](proto::frame_buffer& b) { return writer_.pong(b).has_value(); });
            continue;
        }
        held_.push_back(std::move(*r));
    }
}

bool wire_client::wait_closed(std::chrono::milliseconds timeout) {
    const auto until = std::chrono::steady_clock::now() + timeout;
    while (!eof_) {
        const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
            until - std::chrono::steady_clock::now());
        if (left.count() <= 0) {
            return false;
        }
        auto r = read_frame(left);
        if (r) {
            held_.push_back(std::move(*r));
        } else if (!eof_) {
            return false;
        }
    }
    return true;
}

}  // namespace nereus::broker::test
