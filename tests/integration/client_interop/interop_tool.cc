// The nereus::client side of the interoperability test (client_interop.sh):
//   interop_tool subscribe <port> <topic> <sub>          create a durable subscription (Earliest)
//   interop_tool produce <port> <topic> <n> <tag>        n messages "<tag>-<i>" (batched, key
//   k<i%3>,
//                                                         property src=nereus), each receipted
//   interop_tool consume <port> <topic> <sub> <n> <tag>  n messages, exactly
//   "<tag>-0".."<tag>-<n-1>"
//                                                         in order, each acked with its
//                                                         ACK_RESPONSE
// Exits 0 when everything checked out, 1 with a line saying what did not. Every wait is bounded.

#include "nereus/client/client.h"

#include <boost/asio/use_future.hpp>
#include <chrono>
#include <cstdio>
#include <future>
#include <string>
#include <vector>

namespace nc = nereus::client;
namespace asio = boost::asio;
using namespace std::chrono_literals;

namespace {

template <class T>
nereus::result<T> wait(std::future<nereus::result<T>> f) {
    if (f.wait_for(20s) != std::future_status::ready) {
        return nereus::error(nc::errc::timeout);
    }
    return f.get();
}

int fail(const std::string& what) {
    std::printf("FAIL: %s\n", what.c_str());
    return 1;
}

int run(int argc, char** argv) {
    if (argc < 4) {
        return fail("usage: interop_tool subscribe|produce|consume <port> <topic> ...");
    }
    const std::string mode = argv[1];
    nc::client_options co;
    co.service_url = std::string("pulsar://127.0.0.1:") + argv[2];
    co.operation_timeout = 10s;
    nc::client c(co);
    const std::string topic = argv[3];
    int rc = 0;
    if (mode == "subscribe" && argc == 5) {
        nc::consumer_options o;
        o.topics = {topic};
        o.subscription = argv[4];
        o.start = nc::initial_position::earliest;
        auto s = wait(c.subscribe(o, asio::use_future));
        if (!s) {
            rc = fail("subscribe: " + s.error().message());
        } else if (!wait(s->close(asio::use_future))) {
            rc = fail("close");
        }
    } else if (mode == "produce" && argc == 6) {
        const int n = std::stoi(argv[4]);
        const std::string tag = argv[5];
        nc::producer_options o;
        o.topic = topic;
        o.batch_max_messages = 4;
        auto p = wait(c.create_producer(o, asio::use_future));
        if (!p) {
            rc = fail("create_producer: " + p.error().message());
        } else {
            std::vector<std::future<nereus::result<nc::message_id>>> fs;
            for (int i = 0; i < n; ++i) {
                auto m = nc::outgoing_message::text(tag + "-" + std::to_string(i))
                             .with_key("k" + std::to_string(i % 3))
                             .with_property("src", "nereus");
                fs.push_back(p->send(std::move(m), asio::use_future));
            }
            for (auto& f : fs) {
                auto r = wait(std::move(f));
                if (!r) {
                    rc = fail("send: " + r.error().message());
                    break;
                }
            }
            (void)wait(p->close(asio::use_future));
        }
    } else if (mode == "consume" && argc == 7) {
        const int n = std::stoi(argv[5]);
        const std::string tag = argv[6];
        nc::consumer_options o;
        o.topics = {topic};
        o.subscription = argv[4];
        o.start = nc::initial_position::earliest;
        auto s = wait(c.subscribe(o, asio::use_future));
        if (!s) {
            rc = fail("subscribe: " + s.error().message());
        }
        for (int i = 0; s && i < n && rc == 0; ++i) {
            auto m = wait(s->receive(asio::use_future));
            if (!m) {
                rc = fail("receive " + std::to_string(i) + ": " + m.error().message());
                break;
            }
            const std::string want = tag + "-" + std::to_string(i);
            if (m->payload_text() != want) {
                rc = fail("got '" + std::string(m->payload_text()) + "', want '" + want + "'");
                break;
            }
            if (m->property_value("src") != std::optional<std::string_view>("flex")) {
                rc = fail("message " + want + " lacks property src=flex");
                break;
            }
            auto a = wait(s->acknowledge(m->id(), asio::use_future));
            if (!a) {
                rc = fail("ack: " + a.error().message());
            }
        }
        if (s) {
            (void)wait(s->close(asio::use_future));
        }
    } else {
        rc = fail("bad arguments");
    }
    c.close();
    if (rc == 0) {
        std::printf("OK %s\n", mode.c_str());
    }
    return rc;
}

}  // namespace

int main(int argc, char** argv) {
    return run(argc, argv);
}
