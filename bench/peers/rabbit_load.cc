// RabbitMQ quorum-queue load generator (rabbitmq-c). Producer: persistent messages on a
// confirm channel, at most `window` unconfirmed; a publisher confirm (basic.ack, possibly
// `multiple`) is the receipt: a quorum queue confirms after its Raft log (Ra WAL) is fsync'd.
// Consumer: basic.consume with prefetch `window`, manual acks sent with `multiple` whenever
// the receive buffer is drained (or every 256 messages). AMQP acks have no response, so the
// consumer cannot wait for an ack to be durable.
// Ownership: each producer/consumer owns its connection. Not thread-safe per object.

#include "load.h"
#include <amqp.h>
#include <amqp_tcp_socket.h>
#include <string>
#include <sys/time.h>
#include <vector>

namespace nereus::bench {
namespace {

std::string reply_error(const amqp_rpc_reply_t& r, const char* what) {
    if (r.reply_type == AMQP_RESPONSE_NORMAL)
        return "";
    if (r.reply_type == AMQP_RESPONSE_LIBRARY_EXCEPTION) {
        return std::string(what) + ": " + amqp_error_string2(r.library_error);
    }
    if (r.reply_type == AMQP_RESPONSE_SERVER_EXCEPTION && r.reply.id == AMQP_CHANNEL_CLOSE_METHOD) {
        auto* m = static_cast<amqp_channel_close_t*>(r.reply.decoded);
        return std::string(what) + ": channel closed: " +
               std::string(static_cast<char*>(m->reply_text.bytes), m->reply_text.len);
    }
    return std::string(what) + ": server exception";
}

struct connection {
    amqp_connection_state_t conn = nullptr;
    std::string err;
    explicit connection(const plan& p) {
        conn = amqp_new_connection();
        amqp_socket_t* s = amqp_tcp_socket_new(conn);
        if (!s || amqp_socket_open(s, p.host.c_str(), p.port) != AMQP_STATUS_OK) {
            err = "socket open failed";
            return;
        }
        err = reply_error(
            amqp_login(conn, "/", 0, 131072, 0, AMQP_SASL_METHOD_PLAIN, "guest", "guest"), "login");
        if (!err.empty())
            return;
        amqp_channel_open(conn, 1);
        err = reply_error(amqp_get_rpc_reply(conn), "channel.open");
    }
    ~connection() {
        if (conn) {
            amqp_channel_close(conn, 1, AMQP_REPLY_SUCCESS);
            amqp_connection_close(conn, AMQP_REPLY_SUCCESS);
            amqp_destroy_connection(conn);
        }
    }
};

class rabbit_producer final : public producer {
public:
    explicit rabbit_producer(const plan& p) : c_(p) {}

    std::string run(const plan& p, producer_stats& st) override {
        if (!c_.err.empty())
            return c_.err;
        amqp_confirm_select(c_.conn, 1);
        if (auto e = reply_error(amqp_get_rpc_reply(c_.conn), "confirm.select"); !e.empty())
            return e;
        amqp_basic_properties_t props{};
        props._flags = AMQP_BASIC_DELIVERY_MODE_FLAG;
        props.delivery_mode = 2;
        const amqp_bytes_t queue = amqp_cstring_bytes(p.name.c_str());
        send_window w(p, st);
        const auto publish = [&](std::vector<char>& buf) -> std::string {
            const int rc = amqp_basic_publish(c_.conn, 1, amqp_empty_bytes, queue, 0, 0, &props,
                                              amqp_bytes_t{buf.size(), buf.data()});
            if (rc != AMQP_STATUS_OK)
                return std::string("publish: ") + amqp_error_string2(rc);
            return "";
        };
        while (!w.done()) {
            const auto now = now_ns();
            if (w.timed_out(now))
                return "timeout";
            if (auto e = w.send_due(now, publish); !e.empty())
                return e;
            timeval tv{0, 0};
            timeval* tvp = nullptr;  // block until a frame arrives
            if (const auto d = w.next_send_in()) {
                tv.tv_sec = static_cast<long>(*d / 1000000000ULL);
                tv.tv_usec = static_cast<long>((*d % 1000000000ULL) / 1000);
                tvp = &tv;
            }
            if (w.nothing_in_flight() && tvp == nullptr)
                continue;
            amqp_frame_t f;
            const int rc = amqp_simple_wait_frame_noblock(c_.conn, &f, tvp);
            if (rc == AMQP_STATUS_TIMEOUT)
                continue;
            if (rc != AMQP_STATUS_OK)
                return std::string("wait frame: ") + amqp_error_string2(rc);
            if (f.frame_type != AMQP_FRAME_METHOD)
                continue;
            const auto t = now_ns();
            if (f.payload.method.id == AMQP_BASIC_ACK_METHOD ||
                f.payload.method.id == AMQP_BASIC_NACK_METHOD) {
                std::uint64_t tag = 0;
                bool multiple = false;
                if (f.payload.method.id == AMQP_BASIC_ACK_METHOD) {
                    auto* a = static_cast<amqp_basic_ack_t*>(f.payload.method.decoded);
                    tag = a->delivery_tag;
                    multiple = a->multiple;
                } else {
                    auto* a = static_cast<amqp_basic_nack_t*>(f.payload.method.decoded);
                    tag = a->delivery_tag;
                    multiple = a->multiple;
                    st.errors += multiple ? tag - st.acked : 1;
                }
                // Delivery tags are 1-based publish indexes; confirms arrive in order here.
                const std::uint64_t upto = multiple ? tag : tag;
                while (st.acked < upto) {
                    if (!multiple && st.acked + 1 != tag)
                        break;
                    w.receipt(t);
                }
                st.last_ack_ns = t;
            } else if (f.payload.method.id == AMQP_CHANNEL_CLOSE_METHOD) {
                return "channel closed by the server";
            }
            amqp_maybe_release_buffers(c_.conn);
        }
        return "";
    }

private:
    connection c_;
};

class rabbit_consumer final : public consumer {
public:
    explicit rabbit_consumer(const plan& p) : c_(p) {}

    std::string run(const plan& p,
                    consumer_stats& st,
                    const std::function<void()>& ready) override {
        if (!c_.err.empty())
            return c_.err;
        amqp_basic_qos(c_.conn, 1, 0,
                       static_cast<std::uint16_t>(std::min<std::uint32_t>(p.window, 65535)), 0);
        if (auto e = reply_error(amqp_get_rpc_reply(c_.conn), "basic.qos"); !e.empty())
            return e;
        amqp_basic_consume(c_.conn, 1, amqp_cstring_bytes(p.name.c_str()), amqp_empty_bytes, 0, 0,
                           0, amqp_empty_table);
        if (auto e = reply_error(amqp_get_rpc_reply(c_.conn), "basic.consume"); !e.empty())
            return e;
        ready();
        if (st.start_ns == 0)
            st.start_ns = now_ns();
        const std::uint64_t deadline = now_ns() + static_cast<std::uint64_t>(p.timeout * 1e9);
        std::uint64_t last_tag = 0;
        std::uint64_t acked_tag = 0;
        while (st.distinct < p.count) {
            if (now_ns() > deadline)
                return "timeout";
            amqp_maybe_release_buffers(c_.conn);
            amqp_envelope_t env;
            timeval tv{0, 200000};
            const auto r = amqp_consume_message(c_.conn, &env, &tv, 0);
            if (r.reply_type == AMQP_RESPONSE_LIBRARY_EXCEPTION &&
                r.library_error == AMQP_STATUS_TIMEOUT) {
                continue;
            }
            if (r.reply_type != AMQP_RESPONSE_NORMAL)
                return reply_error(r, "consume");
            st.on_message(env.message.body.bytes, env.message.body.len, now_ns());
            last_tag = env.delivery_tag;
            amqp_destroy_envelope(&env);
            const bool drained = !amqp_data_in_buffer(c_.conn) && !amqp_frames_enqueued(c_.conn);
            if (drained || last_tag - acked_tag >= 256 || st.distinct >= p.count) {
                if (amqp_basic_ack(c_.conn, 1, last_tag, 1) != AMQP_STATUS_OK)
                    return "basic.ack failed";
                acked_tag = last_tag;
            }
        }
        return "";
    }

private:
    connection c_;
};

}  // namespace
}  // namespace nereus::bench

int main(int argc, char** argv) {
    using namespace nereus::bench;
    // Declares the durable quorum queue before the run.
    const auto setup = [](const plan& p) -> std::string {
        connection c(p);
        if (!c.err.empty())
            return c.err;
        amqp_table_entry_t e;
        e.key = amqp_cstring_bytes("x-queue-type");
        e.value.kind = AMQP_FIELD_KIND_UTF8;
        e.value.value.bytes = amqp_cstring_bytes("quorum");
        amqp_table_t args{1, &e};
        amqp_queue_declare(c.conn, 1, amqp_cstring_bytes(p.name.c_str()), 0, 1, 0, 0, args);
        return reply_error(amqp_get_rpc_reply(c.conn), "queue.declare");
    };
    return run_main<rabbit_producer, rabbit_consumer>(argc, argv, setup);
}
