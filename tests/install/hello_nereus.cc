// Built out of tree against the installed nereus::client (tests/install/run.sh): connects to a
// broker, produces one message, consumes it on a new subscription and acknowledges it.
//   hello_nereus <service-url> [topic]
// Prints "received: hello from <topic>" and "acknowledged", exits 0; any error: a line and 1.
// Every wait is bounded (20 s).
#include <boost/asio/use_future.hpp>
#include <chrono>
#include <cstdio>
#include <future>
#include <nereus/client/client.h>
#include <string>

namespace nc = nereus::client;
namespace asio = boost::asio;

template <class T>
nereus::result<T> wait(std::future<nereus::result<T>> f) {
    if (f.wait_for(std::chrono::seconds(20)) != std::future_status::ready) {
        return nereus::error(nc::errc::timeout);
    }
    return f.get();
}

int main(int argc, char** argv) {
    if (argc < 2) {
        std::printf("usage: hello_nereus <service-url> [topic]\n");
        return 2;
    }
    const std::string topic = argc > 2 ? argv[2] : "hello";
    nc::client c({.service_url = argv[1]});  // owns one io thread
    nc::consumer_options o;
    o.topics = {topic};
    o.subscription = "hello-sub";
    o.start = nc::initial_position::earliest;
    auto s = wait(c.subscribe(o, asio::use_future));  // result<consumer>
    auto p = wait(c.create_producer({.topic = topic}, asio::use_future));
    if (!s || !p) {
        std::printf("FAIL: %s\n", (!s ? s.error() : p.error()).message().c_str());
        return 1;
    }
    auto id = wait(p->send(nc::outgoing_message::text("hello from " + topic),
                           asio::use_future));  // confirmed: SEND_RECEIPT
    auto m = wait(s->receive(asio::use_future));
    if (!id || !m) {
        std::printf("FAIL: %s\n", (!id ? id.error() : m.error()).message().c_str());
        return 1;
    }
    std::printf("received: %.*s\n", static_cast<int>(m->payload_text().size()),
                m->payload_text().data());
    auto acked = wait(s->acknowledge(m->id(), asio::use_future));  // confirmed: ACK_RESPONSE
    if (!acked) {
        std::printf("FAIL: ack: %s\n", acked.error().message().c_str());
        return 1;
    }
    std::printf("acknowledged %s\n", m->id().to_string().c_str());
    c.close();
    return 0;
}
