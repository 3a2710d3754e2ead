#include "nereus/runtime/pulsar/producer.h"

#include "nereus/runtime/pulsar/errors.h"

#include <boost/asio/use_awaitable.hpp>
#include <cstring>

namespace nereus::runtime::pulsar {

namespace asio = boost::asio;
namespace nc = nereus::client;

namespace {

class client_producer final : public producer_port {
public:
    explicit client_producer(nc::producer p) : p_(std::move(p)) {}

    asio::awaitable<result<message_id>> send(outgoing m) override {
        nc::outgoing_message out;
        out.payload.resize(m.payload.size());
        if (!m.payload.empty())
            std::memcpy(out.payload.data(), m.payload.data(), m.payload.size());
        out.key = std::move(m.key);
        out.properties = std::move(m.properties);
        auto r = co_await p_.send(std::move(out), asio::use_awaitable);
        if (!r)
            co_return error(from_client(r.error()));
        co_return message_id{r->ledger, r->entry, r->partition, r->batch_index};
    }

    asio::awaitable<void> close() override { (void)co_await p_.close(asio::use_awaitable); }

private:
    nc::producer p_;
};

}  // namespace

std::unique_ptr<producer_port> make_producer_port(nc::producer p) {
    return std::make_unique<client_producer>(std::move(p));
}

}  // namespace nereus::runtime::pulsar
