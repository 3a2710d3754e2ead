// broker_campaign — the broker crash campaign (issue 8; run it through tests/crash/run).
//
// Starts `nereus standalone` (its own temp data dir, free --port and --http-port), runs a mixed
// load against it over the Pulsar binary protocol, SIGKILLs it at a random moment, restarts it,
// and checks what survived against an exact model of what the broker confirmed:
//
//   load (one thread per role, each its own connection, the blocking wire client of the broker
//   tests built on nereus::proto):
//     pa       producer, one message per SEND, receipts tracked (window 64)
//     pb       producer, batches of 1..6 messages per SEND (SingleMessageMetadata), receipts
//     s-ind    Shared: individual acks with request ids (ACK_RESPONSE), nacks
//              (REDELIVER_UNACKNOWLEDGED), some messages left unacked
//     s-cum    Exclusive: cumulative acks with request ids
//     s-bidx   Failover: batch-index acks (ack_set) of random indexes, whole-entry acks
//     s-churn  Exclusive: acks, then one of SEEK (client), reset cursor (admin REST
//              POST .../resetcursor), UNSUBSCRIBE + re-SUBSCRIBE (earliest); repeat
//     audit    Exclusive, never acked during the load: the ground truth of what is stored
//   all on topic crash-t; on topic crash-flex the stock pulsar-flex client (flex_load.js, a node
//   process SIGKILLed by PID after the broker) produces with receipts and acks / nacks on the
//   Shared subscription flex-sub, printing each confirmed event; audit there: flex-audit.
//   One kill in five is followed by a second SIGKILL during the restart (recovery).
//   During the load, internalStats of each topic is polled every ~200 ms: no cursor's
//   markDeletePosition may be behind the first retained entry (the retention pass runs every
//   second; a trim that passed a cursor is visible only here, since a restart repairs it).
//
//   after each restart (verification; nothing else runs):
//     1. a fence message is produced (receipted); every subscription is read by a fresh consumer
//        until the fence arrives;
//     2. audit: every receipted message is present at its receipted id with its payload, per
//        producer in sequence order without duplicates, nothing that was never sent;
//     3. every subscription: no message whose ack was confirmed is delivered, every message
//        whose ack was never sent is delivered (acks without a response may go either way);
//        a seek / reset / unsubscribe whose answer was lost leaves two candidate states, and the
//        delivered set must match one of them exactly;
//     4. everything delivered is acked (responses awaited), so the next round starts from a
//        known state: every subscription acked through the fence;
//     0. (right after the restart, cursors lagging) internalStats: no cursor's
//        markDeletePosition behind the first retained entry;
//     5. retention (the broker runs with defaultRetention 0/0 and a pass every second):
//        POST .../trim, then internalStats: the first retained entry is
//        exactly fence + 1 (everything acked was trimmed) and no cursor is behind it.
//
// One line per kill, then `kills=N violations=M`; exit status 1 when M > 0, 2 when the campaign
// itself could not run (broker does not start, ...).
//
// Every process started is stopped by its PID (SIGKILL + waitpid); loops are bounded.
// Model ownership: one `model` per topic, written by the load threads under its mutex and read
// by the verification after they were joined. Figures and how to run: doc/testing.md.

#include "nereus/proto/batch_codec.h"
#include "nereus/proto/commands.h"
#include "nereus/proto/pulsar_api.h"

#include "support/child_process.h"
#include "support/standalone_process.h"
#include "unit/broker/support/wire_client.h"
#include <algorithm>
#include <arpa/inet.h>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fcntl.h>
#include <filesystem>
#include <map>
#include <mutex>
#include <netinet/in.h>
#include <optional>
#include <poll.h>
#include <random>
#include <set>
#include <signal.h>
#include <string>
#include <sys/socket.h>
#include <sys/wait.h>
#include <thread>
#include <unistd.h>
#include <vector>

namespace {

using namespace std::chrono_literals;
using nereus::broker::test::received;
using nereus::broker::test::wire_client;
namespace proto = nereus::proto;
namespace pb = nereus::proto::pb;
using clock_type = std::chrono::steady_clock;

// The campaign's two topics: `crash-t` (the C++ load) and `crash-flex` (pulsar-flex).
std::string topic_url(const std::string& t) {
    return "persistent://public/default/" + t;
}
std::string admin_path(const std::string& t) {
    return "/admin/v2/persistent/public/default/" + t;
}

double seconds_since(clock_type::time_point t) {
    return std::chrono::duration<double>(clock_type::now() - t).count();
}

// ---------------------------------------------------------------------------------------------
// The broker process: tests/support/standalone_process.h with the campaign's config file, new
// free ports at every spawn (no client of a killed life reaches the next one), and its uptime.

class broker_process {
public:
    broker_process(std::string binary,
                   std::string data_dir,
                   std::string log_path,
                   std::string config_path)
        : proc_({.binary = std::move(binary),
                 .data_dir = std::move(data_dir),
                 .log = std::move(log_path),
                 .args = {"--config", std::move(config_path)}}) {}

    // Spawns the broker (stdout and stderr appended to the log) and waits until it answers a
    // CONNECT and the admin health route, at most `timeout`.
    bool start(std::chrono::seconds timeout) { return spawn() && proc_.wait_ready(timeout); }

    // Spawns the broker without waiting for it (a kill during its recovery).
    bool spawn() {
        proc_.pick_ports();
        if (!proc_.spawn()) {
            return false;
        }
        started_ = clock_type::now();
        return true;
    }

    // SIGKILL and reap. Returns the uptime in seconds.
    double kill() {
        if (proc_.pid() <= 0) {
            return 0;
        }
        const double up = seconds_since(started_);
        proc_.kill9();
        return up;
    }

    [[nodiscard]] pid_t pid() const { return proc_.pid(); }
    [[nodiscard]] std::uint16_t port() const { return proc_.port(); }
    [[nodiscard]] std::uint16_t http_port() const { return proc_.http_port(); }

private:
    nereus::test::standalone_process proc_;
    clock_type::time_point started_{};
};

// A one-shot HTTP/1.1 request (Connection: close). Returns {status, body}; status 0 when the
// connection failed or timed out (outcome unknown for a state-changing request).
std::pair<int, std::string> http_request(std::uint16_t port,
                                         const std::string& method,
                                         const std::string& path,
                                         const std::string& body,
                                         std::chrono::milliseconds timeout = 10s) {
    const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0) {
        return {0, {}};
    }
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_port = htons(port);
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0) {
        ::close(fd);
        return {0, {}};
    }
    std::string req = method + " " + path + " HTTP/1.1\r\nHost: 127.0.0.1\r\n";
    if (!body.empty()) {
        req += "Content-Type: application/json\r\n";
    }
    req +=
        "Content-Length: " + std::to_string(body.size()) + "\r\nConnection: close\r\n\r\n" + body;
    std::size_t sent = 0;
    while (sent < req.size()) {
        const auto n = ::send(fd, req.data() + sent, req.size() - sent, MSG_NOSIGNAL);
        if (n <= 0) {
            ::close(fd);
            return {0, {}};
        }
        sent += static_cast<std::size_t>(n);
    }
    std::string resp;
    const auto until = clock_type::now() + timeout;
    for (;;) {
        const auto left =
            std::chrono::duration_cast<std::chrono::milliseconds>(until - clock_type::now());
        if (left.count() <= 0) {
            ::close(fd);
            return {0, {}};
        }
        pollfd p{fd, POLLIN, 0};
        if (::poll(&p, 1, static_cast<int>(left.count())) <= 0) {
            continue;
        }
        char buf[8192];
        const auto n = ::recv(fd, buf, sizeof buf, 0);
        if (n <= 0) {
            break;
        }
        resp.append(buf, static_cast<std::size_t>(n));
    }
    ::close(fd);
    if (resp.size() < 12 || resp.compare(0, 5, "HTTP/") != 0) {
        return {0, {}};
    }
    const int status = std::atoi(resp.c_str() + 9);
    const auto hdr_end = resp.find("\r\n\r\n");
    std::string out = hdr_end == std::string::npos ? std::string() : resp.substr(hdr_end + 4);
    // A chunked body (Beast may chunk): strip the chunk framing.
    if (resp.find("Transfer-Encoding: chunked") != std::string::npos ||
        resp.find("transfer-encoding: chunked") != std::string::npos) {
        std::string plain;
        std::size_t at = 0;
        while (at < out.size()) {
            const auto eol = out.find("\r\n", at);
            if (eol == std::string::npos) {
                break;
            }
            const auto n = std::strtoul(out.substr(at, eol - at).c_str(), nullptr, 16);
            if (n == 0) {
                break;
            }
            plain.append(out, eol + 2, n);
            at = eol + 2 + n + 2;
        }
        out = std::move(plain);
    }
    return {status, out};
}

// ---------------------------------------------------------------------------------------------
// Messages.

// A message's place in the topic: entry id and index in its batch (0 for a non-batched entry).
struct key {
    std::uint64_t entry = 0;
    std::int32_t index = 0;
    auto operator<=>(const key&) const = default;
};

struct delivered_entry {
    std::uint64_t ledger = 0;
    std::uint64_t entry = 0;
    std::int32_t batch_size = 1;  // messages in the entry
    bool batched = false;
    std::vector<std::int32_t> indexes;  // delivered (not acked) indexes
    std::vector<std::string> payloads;  // per index in the entry (all of them)
    std::string producer;               // MessageMetadata.producer_name
    std::uint64_t sequence_id = 0;      // MessageMetadata.sequence_id
};

// Parses a MESSAGE: its stored section (optional 0x0e01 checksum, metadata, payload).
std::optional<delivered_entry> parse_message(const received& r) {
    const auto& m = r.cmd.message();
    delivered_entry d;
    d.ledger = m.message_id().ledgerid();
    d.entry = m.message_id().entryid();
    const auto& s = r.stored;
    std::size_t at = 0;
    if (s.size() >= 6 && s[0] == std::byte{0x0e} && s[1] == std::byte{0x01}) {
        at = 6;
    }
    if (s.size() < at + 4) {
        return std::nullopt;
    }
    const std::uint32_t md_size = (std::to_integer<std::uint32_t>(s[at]) << 24) |
                                  (std::to_integer<std::uint32_t>(s[at + 1]) << 16) |
                                  (std::to_integer<std::uint32_t>(s[at + 2]) << 8) |
                                  std::to_integer<std::uint32_t>(s[at + 3]);
    at += 4;
    if (s.size() < at + md_size) {
        return std::nullopt;
    }
    pb::MessageMetadata md;
    if (!md.ParseFromArray(s.data() + at, static_cast<int>(md_size))) {
        return std::nullopt;
    }
    at += md_size;
    d.producer = md.producer_name();
    d.sequence_id = md.sequence_id();
    const std::span<const std::byte> payload(s.data() + at, s.size() - at);
    if (md.has_num_messages_in_batch()) {
        d.batched = true;
        d.batch_size = md.num_messages_in_batch();
        proto::batch_reader br;
        br.reset(payload, d.batch_size);
        for (;;) {
            auto n = br.next();
            if (!n) {
                return std::nullopt;
            }
            if (!*n) {
                break;
            }
            d.payloads.emplace_back(reinterpret_cast<const char*>(br.payload().data()),
                                    br.payload().size());
        }
        if (static_cast<std::int32_t>(d.payloads.size()) != d.batch_size) {
            return std::nullopt;
        }
    } else {
        d.payloads.emplace_back(reinterpret_cast<const char*>(payload.data()), payload.size());
    }
    for (std::int32_t i = 0; i < d.batch_size; ++i) {
        bool unacked = m.ack_set_size() == 0;
        if (!unacked) {
            const auto w = static_cast<std::size_t>(i / 64);
            unacked = w < static_cast<std::size_t>(m.ack_set_size()) &&
                      ((static_cast<std::uint64_t>(m.ack_set(static_cast<int>(w))) >> (i % 64)) &
                       1U) != 0;
        }
        if (unacked) {
            d.indexes.push_back(i);
        }
    }
    return d;
}

// The retention-floor check on an internalStats answer `s`: parses
// "ledgers":[{"ledgerId":L,"entries":N,"firstEntry":F,...}] and every cursor's
// "markDeletePosition":"L:E"; every cursor's E + 1 must be >= F (no cursor behind the first
// retained entry). `first` gets F (-1 when absent). Holds at every instant of a correct broker:
// F is read before the cursors, only grows, and no cursor is ever below the current F.
std::vector<std::string> floor_violations(const std::string& s, long long& first) {
    std::vector<std::string> out;
    first = -1;
    const auto fe = s.find("\"firstEntry\":");
    if (fe == std::string::npos) {
        out.push_back("internalStats without firstEntry: " + s.substr(0, 200));
        return out;
    }
    first = std::strtoll(s.c_str() + fe + 13, nullptr, 10);
    std::size_t at = 0;
    int cursors = 0;
    while ((at = s.find("\"markDeletePosition\":\"", at)) != std::string::npos) {
        at += 22;
        const auto colon = s.find(':', at);
        const long long e = std::strtoll(s.c_str() + colon + 1, nullptr, 10);
        ++cursors;
        // A subscription deleted a moment ago (UNSUBSCRIBE) may still be listed: its cursor is
        // a DELETED tombstone (mark-delete 0), which holds no data and is not in the floor.
        const auto next = s.find("\"markDeletePosition\":\"", at);
        const auto life = s.find("\"lifecycle\":\"DELETED\"", at);
        if (life != std::string::npos && (next == std::string::npos || life < next)) {
            continue;
        }
        if (e + 1 < first) {
            out.push_back("a cursor's markDeletePosition " + s.substr(at, s.find('"', at) - at) +
                          " is behind the first retained entry " + std::to_string(first));
        }
    }
    if (cursors == 0) {
        out.push_back("internalStats lists no cursor");
    }
    return out;
}

// ---------------------------------------------------------------------------------------------
// The model.

// What one subscription's durable state may be. Entries below `acked_below` are acked
// (confirmed); `acked` holds confirmed acks at or above it; `maybe` acks sent without a
// confirmation (and entries below `maybe_below`: an unconfirmed cumulative ack).
// `recreated`: the subscription was deleted (or may have been) and created again at the earliest
// retained entry: entries at or below `trim_bound` may come back, as a contiguous suffix.
struct sub_state {
    std::string what = "as acked";
    std::uint64_t acked_below = 0;
    std::uint64_t maybe_below = 0;
    bool recreated = false;
    std::uint64_t trim_bound = 0;
    std::set<key> acked;
    std::set<key> maybe;

    [[nodiscard]] bool is_acked(key k) const {
        if (recreated && k.entry <= trim_bound) {
            return false;
        }
        return k.entry < acked_below || acked.contains(k) || acked.contains(key{k.entry, -1});
    }
    [[nodiscard]] bool may_be_acked(key k) const {
        return k.entry < maybe_below || maybe.contains(k) || maybe.contains(key{k.entry, -1});
    }
    // An ack (confirmed or not) was sent for message `index` of `entry`.
    [[nodiscard]] bool ack_sent(std::uint64_t entry, std::int32_t index) const {
        return acked.contains(key{entry, index}) || maybe.contains(key{entry, index});
    }
};

struct sub_model {
    std::string name;
    std::int32_t type = 0;  // Exclusive 0, Shared 1, Failover 2
    std::vector<sub_state> candidates{sub_state{}};
};

struct producer_model {
    std::uint64_t sent = 0;                  // sequence ids [0, sent) were sent
    std::map<std::uint64_t, key> receipted;  // sequence id -> where the receipt put it
};

// One topic's model. Keys with index -1 stand for a whole entry (pulsar-flex acks entries).
struct model {
    std::string topic;  // local name
    std::string audit;  // the audit subscription's name
    bool flex = false;  // produced by pulsar-flex (payloads `f<round>:<u>:<i>/<n>`)
    std::mutex mu;
    std::map<std::string, producer_model> producers;
    std::map<std::string, sub_model> subs;
    std::uint64_t base = 0;        // every subscription acked everything below this entry
    std::uint64_t ledger = ~0ULL;  // the topic's ledger id (one stream: constant)
    std::uint64_t receipts = 0;    // confirmed this round
    std::uint64_t acks = 0;        // confirmed this round
    long long first_entry = 0;     // the first retained entry (internalStats), last seen
    std::map<std::string, std::uint64_t> ops;  // operations sent / confirmed, by kind

    // pulsar-flex receipts since the last verification: (round tag, unit) -> messages.
    std::map<std::pair<std::string, std::uint64_t>, std::uint32_t> flex_receipts;
    std::set<std::string> known_flex_tags;  // rounds whose pulsar-flex load ran

    sub_state& only(const std::string& s) { return subs[s].candidates.back(); }
};

// ---------------------------------------------------------------------------------------------
// Wire helpers.

std::string payload_of(const std::string& producer, std::uint64_t seq) {
    return producer + ":" + std::to_string(seq);
}

bool open_producer(wire_client& c,
                   const std::string& topic,
                   std::uint64_t producer_id,
                   const std::string& name) {
    const std::string url = topic_url(topic);
    proto::producer_args a;
    a.topic = url;
    a.producer_id = producer_id;
    a.request_id = 1;
    a.producer_name = name;
    if (!c.send([&](proto::frame_buffer& b) { return c.writer().producer(b, a).has_value(); })) {
        return false;
    }
    auto r = c.expect(proto::command_type::producer_success, 10s);
    return r.has_value();
}

// SEND of `count` messages (count > 1 or `batched`: one batch entry) with sequence ids
// [seq, seq + count).
bool send_entry(wire_client& c,
                std::uint64_t producer_id,
                const std::string& name,
                std::uint64_t seq,
                std::int32_t count,
                bool batched) {
    pb::MessageMetadata md;
    md.set_producer_name(name);
    md.set_sequence_id(seq);
    md.set_publish_time(
        static_cast<std::uint64_t>(std::chrono::duration_cast<std::chrono::milliseconds>(
                                       std::chrono::system_clock::now().time_since_epoch())
                                       .count()));
    std::vector<std::byte> payload;
    if (batched) {
        proto::batch_builder bb(payload);
        for (std::int32_t i = 0; i < count; ++i) {
            pb::SingleMessageMetadata sm;
            sm.set_sequence_id(seq + static_cast<std::uint64_t>(i));
            const auto p = payload_of(name, seq + static_cast<std::uint64_t>(i));
            if (!bb.add(sm, std::as_bytes(std::span(p.data(), p.size())))) {
                return false;
            }
        }
        md.set_num_messages_in_batch(count);
        md.set_highest_sequence_id(seq + static_cast<std::uint64_t>(count) - 1);
    } else {
        const auto p = payload_of(name, seq);
        payload.assign(reinterpret_cast<const std::byte*>(p.data()),
                       reinterpret_cast<const std::byte*>(p.data()) + p.size());
    }
    proto::send_args s;
    s.producer_id = producer_id;
    s.sequence_id = seq;
    s.num_messages = count;
    if (batched) {
        s.highest_sequence_id = seq + static_cast<std::uint64_t>(count) - 1;
    }
    return c.send(
        [&](proto::frame_buffer& b) { return c.writer().send(b, s, md, payload).has_value(); });
}

bool subscribe(wire_client& c,
               const std::string& topic,
               std::uint64_t consumer_id,
               std::uint64_t request_id,
               const std::string& sub,
               std::int32_t type,
               std::uint32_t permits) {
    const std::string url = topic_url(topic);
    proto::subscribe_args a;
    a.topic = url;
    a.subscription = sub;
    a.sub_type = type;
    a.consumer_id = consumer_id;
    a.request_id = request_id;
    const std::string cname = sub + "-c" + std::to_string(consumer_id);
    a.consumer_name = cname;
    a.initial_position = 1;  // Earliest
    if (!c.send([&](proto::frame_buffer& b) { return c.writer().subscribe(b, a).has_value(); })) {
        return false;
    }
    const auto until = clock_type::now() + 10s;
    for (;;) {
        if (c.closed() || clock_type::now() >= until) {
            return false;
        }
        auto r = c.next(5ms);
        if (!r) {
            continue;
        }
        if (r->type == proto::command_type::ping) {
            c.send([&](proto::frame_buffer& b) { return c.writer().pong(b).has_value(); });
        } else if (r->type == proto::command_type::success &&
                   r->cmd.success().request_id() == request_id) {
            break;
        } else if (r->type == proto::command_type::error &&
                   r->cmd.error().request_id() == request_id) {
            std::fprintf(stderr, "campaign: subscribe %s: %s\n", sub.c_str(),
                         r->cmd.error().message().c_str());
            return false;
        }
    }
    return c.send([&](proto::frame_buffer& b) {
        return c.writer().flow(b, consumer_id, permits).has_value();
    });
}

proto::message_id whole(std::uint64_t ledger, std::uint64_t entry) {
    proto::message_id id;
    id.ledger_id = ledger;
    id.entry_id = entry;
    return id;
}

bool send_ack(wire_client& c,
              std::uint64_t consumer_id,
              bool cumulative,
              std::span<const proto::message_id> ids,
              std::uint64_t request_id) {
    proto::ack_args a;
    a.consumer_id = consumer_id;
    a.cumulative = cumulative;
    a.ids = ids;
    a.request_id = request_id;
    return c.send([&](proto::frame_buffer& b) { return c.writer().ack(b, a).has_value(); });
}

// ---------------------------------------------------------------------------------------------
// The load.

struct load_context {
    model& m;
    std::uint16_t port = 0;
    std::uint16_t http_port = 0;
    int round = 0;
    std::atomic<bool>& stop;
    std::uint64_t seed = 0;
};

void run_producer(load_context& ctx, const std::string& name, bool batched) {
    auto c = wire_client::open(ctx.port);
    if (!c || !c->handshake(20) || !open_producer(*c, ctx.m.topic, 1, name)) {
        return;
    }
    std::mt19937_64 rng(ctx.seed);
    struct inflight {
        std::uint64_t seq;
        std::int32_t count;
    };
    std::deque<inflight> window;
    std::uint64_t next = 0;
    auto last_send = clock_type::now();
    const auto gap = batched ? 12ms : 4ms;
    while (!ctx.stop.load() && !c->closed()) {
        if (window.size() < 64 && clock_type::now() - last_send >= gap) {
            const auto count = batched ? static_cast<std::int32_t>(1 + rng() % 6) : 1;
            {
                std::lock_guard l(ctx.m.mu);
                ctx.m.producers[name].sent = next + static_cast<std::uint64_t>(count);
            }
            if (!send_entry(*c, 1, name, next, count, batched)) {
                break;
            }
            window.push_back({next, count});
            next += static_cast<std::uint64_t>(count);
            last_send = clock_type::now();
        }
        auto r = c->next(2ms);
        if (!r) {
            continue;
        }
        if (r->type == proto::command_type::ping) {
            c->send([&](proto::frame_buffer& b) { return c->writer().pong(b).has_value(); });
        } else if (r->type == proto::command_type::send_receipt) {
            const auto& sr = r->cmd.send_receipt();
            if (window.empty() || window.front().seq != sr.sequence_id()) {
                std::fprintf(stderr, "campaign: receipt out of order for %s\n", name.c_str());
                break;
            }
            const auto f = window.front();
            window.pop_front();
            std::lock_guard l(ctx.m.mu);
            auto& pm = ctx.m.producers[name];
            for (std::int32_t i = 0; i < f.count; ++i) {
                pm.receipted[f.seq + static_cast<std::uint64_t>(i)] =
                    key{sr.message_id().entryid(), batched ? i : 0};
            }
            ctx.m.receipts += static_cast<std::uint64_t>(f.count);
        } else if (r->type == proto::command_type::send_error) {
            break;  // never receipted: the model keeps it as sent, unconfirmed
        }
    }
}

// A consumer of the load. The roles differ in what they do with a message.
enum class role { individual, cumulative, batch_index };

void run_consumer(load_context& ctx, const std::string& sub, std::int32_t type, role what) {
    auto c = wire_client::open(ctx.port);
    if (!c || !c->handshake(20) || !subscribe(*c, ctx.m.topic, 1, 1, sub, type, 1000)) {
        return;
    }
    std::mt19937_64 rng(ctx.seed);
    std::uint64_t next_request = 2;
    std::map<std::uint64_t, std::pair<std::vector<key>, std::uint64_t>> pending;  // req -> keys
    std::uint32_t used = 0;
    std::uint64_t last_entry = 0;
    std::uint64_t ledger = 0;
    std::uint32_t since_cum = 0;
    while (!ctx.stop.load() && !c->closed()) {
        auto r = c->next(5ms);
        if (!r) {
            continue;
        }
        if (r->type == proto::command_type::ping) {
            c->send([&](proto::frame_buffer& b) { return c->writer().pong(b).has_value(); });
            continue;
        }
        if (r->type == proto::command_type::ack_response) {
            const auto& a = r->cmd.ackresponse();
            auto it = pending.find(a.request_id());
            if (it == pending.end()) {
                continue;
            }
            if (!a.has_error()) {
                std::lock_guard l(ctx.m.mu);
                auto& st = ctx.m.only(sub);
                if (it->second.second != 0) {  // cumulative through entry
                    st.acked_below = std::max(st.acked_below, it->second.second);
                } else {
                    for (auto k : it->second.first) {
                        st.acked.insert(k);
                    }
                }
                ++ctx.m.acks;
                ++ctx.m.ops["confirmed acks " + sub];
            }
            pending.erase(it);
            continue;
        }
        if (r->type != proto::command_type::message) {
            continue;
        }
        auto d = parse_message(*r);
        if (!d) {
            std::fprintf(stderr, "campaign: %s: undecodable message\n", sub.c_str());
            break;
        }
        ledger = d->ledger;
        used += static_cast<std::uint32_t>(d->indexes.size());  // permits count messages
        if (used >= 200) {
            c->send(
                [&](proto::frame_buffer& b) { return c->writer().flow(b, 1, used).has_value(); });
            used = 0;
        }
        const auto dice = rng() % 100;
        std::vector<key> keys;
        for (auto i : d->indexes) {
            keys.push_back(key{d->entry, i});
        }
        if (what == role::individual) {
            if (dice < 12) {  // nack: redelivered later
                {
                    std::lock_guard l(ctx.m.mu);
                    ++ctx.m.ops["nack"];
                }
                const proto::message_id id = whole(d->ledger, d->entry);
                c->send([&](proto::frame_buffer& b) {
                    return c->writer()
                        .redeliver_unacknowledged(b, 1, std::span(&id, 1))
                        .has_value();
                });
                continue;
            }
            if (dice < 25) {
                continue;  // left unacked: must come back after the kill
            }
            const auto req = next_request++;
            {
                std::lock_guard l(ctx.m.mu);
                for (auto k : keys) {
                    ctx.m.only(sub).maybe.insert(k);
                }
                ++ctx.m.ops["individual ack"];
            }
            pending[req] = {keys, 0};
            const proto::message_id id = whole(d->ledger, d->entry);
            if (!send_ack(*c, 1, false, std::span(&id, 1), req)) {
                break;
            }
        } else if (what == role::cumulative) {
            last_entry = d->entry;
            if (++since_cum < 1 + rng() % 30) {
                continue;
            }
            since_cum = 0;
            const auto req = next_request++;
            {
                std::lock_guard l(ctx.m.mu);
                auto& st = ctx.m.only(sub);
                st.maybe_below = std::max(st.maybe_below, last_entry + 1);
                ++ctx.m.ops["cumulative ack"];
            }
            pending[req] = {{}, last_entry + 1};
            const proto::message_id id = whole(ledger, last_entry);
            if (!send_ack(*c, 1, true, std::span(&id, 1), req)) {
                break;
            }
        } else {
            // batch_index: a batch gets a random subset of its delivered indexes acked by
            // ack_set (1 bits = left unacked); a single message is acked whole, or left.
            if (d->batched && d->batch_size > 1) {
                std::vector<key> chosen;
                std::vector<std::int64_t> remaining(
                    static_cast<std::size_t>((d->batch_size + 63) / 64), 0);
                for (std::int32_t i = 0; i < d->batch_size; ++i) {
                    remaining[static_cast<std::size_t>(i / 64)] |= std::int64_t{1} << (i % 64);
                }
                for (auto i : d->indexes) {
                    if (rng() % 2 == 0) {
                        chosen.push_back(key{d->entry, i});
                        remaining[static_cast<std::size_t>(i / 64)] &=
                            ~(std::int64_t{1} << (i % 64));
                    }
                }
                if (chosen.empty()) {
                    continue;
                }
                const auto req = next_request++;
                {
                    std::lock_guard l(ctx.m.mu);
                    for (auto k : chosen) {
                        ctx.m.only(sub).maybe.insert(k);
                    }
                    ++ctx.m.ops["batch-index ack"];
                }
                pending[req] = {chosen, 0};
                proto::message_id id = whole(d->ledger, d->entry);
                id.ack_set = remaining;
                id.batch_size = d->batch_size;
                if (!send_ack(*c, 1, false, std::span(&id, 1), req)) {
                    break;
                }
            } else if (dice < 70) {
                const auto req = next_request++;
                {
                    std::lock_guard l(ctx.m.mu);
                    for (auto k : keys) {
                        ctx.m.only(sub).maybe.insert(k);
                    }
                }
                pending[req] = {keys, 0};
                const proto::message_id id = whole(d->ledger, d->entry);
                if (!send_ack(*c, 1, false, std::span(&id, 1), req)) {
                    break;
                }
            }
        }
    }
}

// The churn subscription: cycles of (consume, ack and wait for the responses) then one of seek,
// admin reset, unsubscribe + resubscribe. Each step waits for its answer, so at a kill at most
// one operation's outcome is unknown; it leaves two candidate states.
void run_churn(load_context& ctx, const std::string& sub) {
    auto c = wire_client::open(ctx.port);
    if (!c || !c->handshake(20)) {
        return;
    }
    std::mt19937_64 rng(ctx.seed);
    std::uint64_t consumer_id = 1;
    std::uint64_t next_request = 1;
    std::uint64_t base = 0;
    {
        std::lock_guard l(ctx.m.mu);
        base = ctx.m.base;
    }
    const auto wait_for = [&](proto::command_type t, std::uint64_t req) -> std::optional<received> {
        const auto until = clock_type::now() + 10s;
        while (!c->closed() && clock_type::now() < until) {
            auto r = c->next(5ms);
            if (!r) {
                continue;
            }
            if (r->type == proto::command_type::ping) {
                c->send([&](proto::frame_buffer& b) { return c->writer().pong(b).has_value(); });
                continue;
            }
            if (r->type == proto::command_type::error && r->cmd.error().request_id() == req) {
                return r;
            }
            if (r->type != t) {
                continue;
            }
            if (t == proto::command_type::success && r->cmd.success().request_id() != req) {
                continue;
            }
            if (t == proto::command_type::ack_response &&
                r->cmd.ackresponse().request_id() != req) {
                continue;
            }
            return r;
        }
        return std::nullopt;
    };
    bool need_subscribe = true;
    // After a recreate (Earliest: from the first retained entry) the next operation is
    // a seek to `base`, so the history is not replayed by every later cycle and verification.
    bool recreated = false;
    for (int cycle = 0; cycle < 10000 && !ctx.stop.load() && !c->closed(); ++cycle) {
        if (need_subscribe &&
            !subscribe(*c, ctx.m.topic, consumer_id, next_request++, sub, 0, 1000)) {
            return;
        }
        need_subscribe = false;
        // Consume a few messages; ack some, each waited for.
        std::vector<delivered_entry> got;
        const auto want = recreated ? 0 : 3 + rng() % 30;
        const auto until = clock_type::now() + 2s;
        while (got.size() < want && clock_type::now() < until && !ctx.stop.load() && !c->closed()) {
            auto r = c->next(5ms);
            if (!r) {
                continue;
            }
            if (r->type == proto::command_type::ping) {
                c->send([&](proto::frame_buffer& b) { return c->writer().pong(b).has_value(); });
            }
            if (r->type != proto::command_type::message ||
                r->cmd.message().consumer_id() != consumer_id) {
                continue;
            }
            auto d = parse_message(*r);
            if (!d) {
                return;
            }
            got.push_back(std::move(*d));
        }
        for (const auto& d : got) {
            if (rng() % 3 == 0 || ctx.stop.load()) {
                continue;
            }
            const auto req = next_request++;
            {
                std::lock_guard l(ctx.m.mu);
                for (auto i : d.indexes) {
                    ctx.m.only(sub).maybe.insert(key{d.entry, i});
                }
            }
            const proto::message_id id = whole(d.ledger, d.entry);
            if (!send_ack(*c, consumer_id, false, std::span(&id, 1), req)) {
                return;
            }
            auto r = wait_for(proto::command_type::ack_response, req);
            if (!r) {
                return;  // outcome unknown: stays in `maybe`
            }
            if (!r->cmd.ackresponse().has_error()) {
                std::lock_guard l(ctx.m.mu);
                for (auto i : d.indexes) {
                    ctx.m.only(sub).acked.insert(key{d.entry, i});
                }
                ++ctx.m.acks;
            }
        }
        if (ctx.stop.load() || c->closed()) {
            return;
        }
        // The operation. A target entry at or above `base` (never below the retention floor).
        std::vector<std::uint64_t> targets;
        for (const auto& d : got) {
            if (d.entry >= base) {
                targets.push_back(d.entry);
            }
        }
        const auto op = recreated ? 0 : rng() % 3;
        if (recreated) {
            targets.clear();
        }
        recreated = false;
        if (targets.empty()) {
            // Only entries older than the last verification were delivered (a recreated
            // subscription replaying history): seek forward to the first entry after it, which
            // no trim can have reached (the audit has not acked it).
            targets.push_back(base);
        }
        const std::uint64_t target = targets[rng() % targets.size()];
        sub_state after;
        if (op < 2) {
            after.what = (op == 0 ? "seek to " : "reset to ") + std::to_string(target);
            after.acked_below = target;
            after.maybe_below = target;
        } else {
            after.what = "unsubscribed";
            after.recreated = true;
            after.trim_bound = base == 0 ? 0 : base - 1;
        }
        {
            std::lock_guard l(ctx.m.mu);
            auto& sm = ctx.m.subs[sub];
            sm.candidates.push_back(after);  // unknown until answered
            ++ctx.m.ops[op == 0 ? "seek" : op == 1 ? "reset cursor" : "unsubscribe"];
        }
        bool confirmed = false;
        std::uint64_t ledger = got.empty() ? 0 : got.front().ledger;
        if (op == 0) {
            const auto req = next_request++;
            const proto::message_id id = whole(ledger, target);
            if (!c->send([&](proto::frame_buffer& b) {
                    return c->writer().seek(b, consumer_id, req, id).has_value();
                })) {
                return;
            }
            auto r = wait_for(proto::command_type::success, req);
            if (!r) {
                return;
            }
            confirmed = r->type == proto::command_type::success;
        } else if (op == 1) {
            const std::string body = "{\"ledgerId\":" + std::to_string(ledger) +
                                     ",\"entryId\":" + std::to_string(target) + "}";
            const auto [status, text] = http_request(
                ctx.http_port, "POST",
                admin_path(ctx.m.topic) + "/subscription/" + sub + "/resetcursor", body);
            if (status == 0) {
                return;  // no answer: unknown
            }
            confirmed = status == 204;
            if (!confirmed) {
                std::fprintf(stderr, "campaign: reset cursor answered %d: %s\n", status,
                             text.c_str());
            }
        } else {
            const auto req = next_request++;
            if (!c->send([&](proto::frame_buffer& b) {
                    return c->writer().unsubscribe(b, consumer_id, req).has_value();
                })) {
                return;
            }
            auto r = wait_for(proto::command_type::success, req);
            if (!r) {
                return;
            }
            confirmed = r->type == proto::command_type::success;
        }
        {
            std::lock_guard l(ctx.m.mu);
            auto& sm = ctx.m.subs[sub];
            if (confirmed) {
                sm.candidates.erase(sm.candidates.begin(), sm.candidates.end() - 1);
                ++ctx.m.ops[op == 0   ? "seek confirmed"
                            : op == 1 ? "reset cursor confirmed"
                                      : "unsubscribe confirmed"];
            } else {
                sm.candidates.pop_back();  // refused: nothing changed
            }
        }
        // The consumer was closed by the seek / reset / unsubscribe: a new one, same connection.
        ++consumer_id;
        need_subscribe = true;
        recreated = confirmed && op == 2;
    }
}

// ---------------------------------------------------------------------------------------------
// Verification.

struct verifier {
    model& m;
    std::uint16_t port;
    std::uint16_t http_port;
    int round;
    std::vector<std::string> violations;
    std::string fatal;  // the campaign itself failed

    void violation(std::string s) { violations.push_back(std::move(s)); }

    // A pulsar-flex payload `f<round>:<u>:<i>/<n>`: of a load that ran, in its place in its
    // entry, of a unit of the size the load sends, and never twice.
    void check_flex_payload(const delivered_entry& d,
                            std::int32_t i,
                            const std::string& p,
                            std::set<std::string>& seen) {
        unsigned long long u = 0;
        int idx = 0;
        int n = 0;
        char tag[32] = {};
        const bool parsed = std::sscanf(p.c_str(), "%31[^:]:%llu:%d/%d", tag, &u, &idx, &n) == 4;
        const int want_n = u % 4 == 3 ? 2 + static_cast<int>(u % 5) : 1;
        const bool known = parsed && (m.known_flex_tags.contains(tag) ||
                                      std::string(tag) == "f" + std::to_string(round - 1) ||
                                      std::string(tag) == "f" + std::to_string(round));
        if (!known || idx != i || n != d.batch_size || n != want_n) {
            violation(m.topic + ": entry " + std::to_string(d.entry) + " holds '" + p +
                      "', never sent");
        }
        if (!seen.insert(p).second) {
            violation(m.topic + ": pulsar-flex message " + p + " stored twice");
        }
    }

    // Reads `sub` with a fresh consumer until the fence entry; nullopt when it did not arrive.
    std::optional<std::vector<delivered_entry>> read_all(wire_client& c,
                                                         const std::string& sub,
                                                         std::int32_t type,
                                                         std::uint64_t fence) {
        if (!subscribe(c, m.topic, 1, 1, sub, type, 100000)) {
            return std::nullopt;
        }
        std::vector<delivered_entry> out;
        // A long replay (a recreated subscription starts at the first retained entry)
        // would stop at the permits and at maxUnackedMessagesPerConsumer (50,000): permits are
        // given back and what was received is acked as it comes (the answers are not needed:
        // the check is on what is delivered, and everything delivered is acked afterwards).
        std::uint32_t since_flow = 0;
        std::size_t acked_upto = 0;
        std::uint64_t req = 1'000'000;
        const auto until = clock_type::now() + 60s;
        while (clock_type::now() < until && !c.closed()) {
            if (since_flow >= 20000) {
                c.send([&](proto::frame_buffer& b) {
                    return c.writer().flow(b, 1, since_flow).has_value();
                });
                since_flow = 0;
            }
            if (out.size() - acked_upto >= 2000) {
                std::vector<proto::message_id> ids;
                for (; acked_upto < out.size(); ++acked_upto) {
                    ids.push_back(whole(out[acked_upto].ledger, out[acked_upto].entry));
                }
                send_ack(c, 1, false, ids, req++);
            }
            auto r = c.next(100ms);
            if (!r) {
                continue;
            }
            if (r->type == proto::command_type::ping) {
                c.send([&](proto::frame_buffer& b) { return c.writer().pong(b).has_value(); });
                continue;
            }
            if (r->type != proto::command_type::message) {
                continue;
            }
            auto d = parse_message(*r);
            if (!d) {
                violation(sub + ": a delivered message does not decode");
                continue;
            }
            const bool last = d->entry == fence;
            since_flow += static_cast<std::uint32_t>(d->indexes.size());
            out.push_back(std::move(*d));
            if (last) {
                return out;
            }
        }
        return std::nullopt;
    }

    // Acks every delivered entry whole, waiting for every ACK_RESPONSE.
    bool ack_all(wire_client& c, const std::string& sub, const std::vector<delivered_entry>& d) {
        std::uint64_t req = 100;
        std::set<std::uint64_t> waiting;
        for (std::size_t i = 0; i < d.size(); i += 200) {
            std::vector<proto::message_id> ids;
            for (std::size_t j = i; j < std::min(d.size(), i + 200); ++j) {
                ids.push_back(whole(d[j].ledger, d[j].entry));
            }
            if (!send_ack(c, 1, false, ids, req)) {
                return false;
            }
            waiting.insert(req++);
        }
        const auto until = clock_type::now() + 30s;
        while (!waiting.empty() && clock_type::now() < until && !c.closed()) {
            auto r = c.next(100ms);
            if (!r || r->type != proto::command_type::ack_response) {
                continue;
            }
            if (r->cmd.ackresponse().has_error()) {
                violation(sub +
                          ": ack of the verification failed: " + r->cmd.ackresponse().message());
            }
            waiting.erase(r->cmd.ackresponse().request_id());
        }
        return waiting.empty();
    }

    // The delivered set checked against one candidate state; returns the problems found.
    std::vector<std::string> check_sub(const std::string& sub,
                                       const sub_state& st,
                                       const std::vector<delivered_entry>& audit,
                                       const std::vector<delivered_entry>& got) {
        std::vector<std::string> bad;
        std::set<key> present;
        for (const auto& d : audit) {
            for (std::int32_t i = 0; i < d.batch_size; ++i) {
                present.insert(key{d.entry, i});
            }
        }
        std::set<key> delivered;
        std::optional<std::uint64_t> lowest_old;
        for (const auto& d : got) {
            for (auto i : d.indexes) {
                const key k{d.entry, i};
                if (!delivered.insert(k).second) {
                    bad.push_back(sub + ": " + std::to_string(k.entry) + ":" + std::to_string(i) +
                                  " delivered twice");
                }
                if (k.entry < m.base) {
                    if (!st.recreated) {
                        bad.push_back(sub + ": entry " + std::to_string(k.entry) +
                                      " below the acked base " + std::to_string(m.base) +
                                      " delivered");
                    } else if (!lowest_old || k.entry < *lowest_old) {
                        lowest_old = k.entry;
                    }
                } else if (!present.contains(k)) {
                    bad.push_back(sub + ": " + std::to_string(k.entry) + ":" + std::to_string(i) +
                                  " delivered but not in the topic");
                }
            }
        }
        // A recreated subscription starts at the first retained entry: the old entries it gets
        // form one contiguous run up to the base, every message of each that the recreated
        // subscription did not ack (an entry it acked whole is not delivered at all).
        if (lowest_old) {
            std::map<std::uint64_t, const delivered_entry*> old;
            for (const auto& d : got) {
                if (d.entry < m.base) {
                    old[d.entry] = &d;
                }
            }
            for (std::uint64_t e = *lowest_old; e < m.base; ++e) {
                auto it = old.find(e);
                bool ok = true;
                if (it == old.end()) {
                    ok = st.ack_sent(e, 0);
                } else {
                    const auto& d = *it->second;
                    for (std::int32_t i = 0; i < d.batch_size && ok; ++i) {
                        ok = std::find(d.indexes.begin(), d.indexes.end(), i) != d.indexes.end() ||
                             st.ack_sent(e, i);
                    }
                }
                if (!ok) {
                    bad.push_back(sub + ": recreated subscription skipped retained entry " +
                                  std::to_string(e));
                    break;
                }
            }
        }
        for (const auto& k : present) {
            const bool got_it = delivered.contains(k);
            const std::string name = std::to_string(k.entry) + ":" + std::to_string(k.index);
            if (st.is_acked(k)) {
                if (got_it) {
                    bad.push_back(sub + ": confirmed ack of " + name + " lost (delivered again)");
                }
            } else if (!st.may_be_acked(k) && !got_it) {
                bad.push_back(sub + ": unacked " + name + " not redelivered");
            }
        }
        return bad;
    }

    void run(int kill_round) {
        (void)kill_round;
        // 0. Right after the restart, before anything acks: no cursor behind the retention
        // floor (the periodic pass ran during the load and may run now).
        check_internal_stats();
        // 1. The fence.
        const std::string fence_name = m.topic + "-fence-" + std::to_string(round);
        auto pc = wire_client::open(port);
        if (!pc || !pc->handshake(20) || !open_producer(*pc, m.topic, 1, fence_name)) {
            fatal = "cannot open the fence producer";
            return;
        }
        {
            std::lock_guard l(m.mu);
            m.producers[fence_name].sent = 1;
        }
        if (!send_entry(*pc, 1, fence_name, 0, 1, false)) {
            fatal = "cannot send the fence";
            return;
        }
        auto receipt = pc->expect(proto::command_type::send_receipt, 20s);
        if (!receipt) {
            violation("the fence message got no receipt");
            fatal = "no fence";
            return;
        }
        const std::uint64_t fence = receipt->cmd.send_receipt().message_id().entryid();
        const std::uint64_t ledger = receipt->cmd.send_receipt().message_id().ledgerid();
        std::lock_guard l(m.mu);
        m.producers[fence_name].receipted[0] = key{fence, 0};
        if (m.ledger != ~0ULL && m.ledger != ledger) {
            violation("the topic's ledger id changed from " + std::to_string(m.ledger) + " to " +
                      std::to_string(ledger));
        }
        m.ledger = ledger;
        pc.reset();

        // 2. The audit subscription: what is stored.
        auto ac = wire_client::open(port);
        std::optional<std::vector<delivered_entry>> audit;
        if (ac && ac->handshake(20)) {
            audit = read_all(*ac, m.audit, 0, fence);
        }
        if (!audit) {
            violation(m.audit + ": the fence was not delivered");
            fatal = "audit read failed";
            return;
        }
        std::map<key, std::string> stored;
        std::map<std::string, std::uint64_t> last_seq;
        std::set<std::string> flex_seen;
        for (const auto& d : *audit) {
            if (d.indexes.size() != static_cast<std::size_t>(d.batch_size)) {
                violation("audit: entry " + std::to_string(d.entry) + " partly acked");
            }
            for (std::int32_t i = 0; i < d.batch_size; ++i) {
                const auto& p = d.payloads[static_cast<std::size_t>(i)];
                stored[key{d.entry, i}] = p;
                if (m.flex && p.rfind(fence_name, 0) != 0) {
                    check_flex_payload(d, i, p, flex_seen);
                    continue;
                }
                const auto colon = p.rfind(':');
                const std::string prod = colon == std::string::npos ? p : p.substr(0, colon);
                const std::uint64_t seq = colon == std::string::npos
                                              ? 0
                                              : std::strtoull(p.c_str() + colon + 1, nullptr, 10);
                auto pm = m.producers.find(prod);
                if (colon == std::string::npos || pm == m.producers.end() ||
                    seq >= pm->second.sent) {
                    violation("audit: entry " + std::to_string(d.entry) + " holds '" + p +
                              "', never sent");
                    continue;
                }
                auto ls = last_seq.find(prod);
                if (ls != last_seq.end() && seq <= ls->second) {
                    violation("audit: " + prod + " seq " + std::to_string(seq) + " after seq " +
                              std::to_string(ls->second) + " (out of order or duplicate)");
                }
                last_seq[prod] = seq;
            }
        }
        for (const auto& [prod, pm] : m.producers) {
            for (const auto& [seq, k] : pm.receipted) {
                if (k.entry < m.base) {
                    continue;  // verified in an earlier round
                }
                auto it = stored.find(k);
                if (it == stored.end()) {
                    violation("receipted " + prod + ":" + std::to_string(seq) + " at " +
                              std::to_string(k.entry) + ":" + std::to_string(k.index) + " missing");
                } else if (it->second != payload_of(prod, seq)) {
                    violation("receipted " + prod + ":" + std::to_string(seq) + " at " +
                              std::to_string(k.entry) + " holds '" + it->second + "'");
                }
            }
        }

        if (m.flex) {
            // Every pulsar-flex receipt: each message of the unit present.
            for (const auto& [unit, n] : m.flex_receipts) {
                for (std::uint32_t i = 0; i < n; ++i) {
                    const auto p = unit.first + ":" + std::to_string(unit.second) + ":" +
                                   std::to_string(i) + "/" + std::to_string(n);
                    if (!flex_seen.contains(p)) {
                        violation(m.topic + ": receipted pulsar-flex message " + p + " missing");
                    }
                }
            }
            m.flex_receipts.clear();
            // Per producer (pulsar-flex names its own), sequence ids increase with the entry.
            std::map<std::string, std::uint64_t> last;
            for (const auto& d : *audit) {
                auto it = last.find(d.producer);
                if (it != last.end() && d.sequence_id <= it->second) {
                    violation(m.topic + ": producer " + d.producer + " sequence id " +
                              std::to_string(d.sequence_id) + " at entry " +
                              std::to_string(d.entry) + " after " + std::to_string(it->second));
                }
                last[d.producer] = d.sequence_id;
            }
        }

        // 3. Every subscription against its candidate states.
        std::vector<std::pair<std::unique_ptr<wire_client>, std::vector<delivered_entry>>> opened;
        for (auto& [name, sm] : m.subs) {
            auto c = wire_client::open(port);
            std::optional<std::vector<delivered_entry>> got;
            if (c && c->handshake(20)) {
                got = read_all(*c, name, sm.type, fence);
            }
            if (!got) {
                violation(name + ": the fence was not delivered");
                continue;
            }
            std::vector<std::string> first_bad;
            bool matched = false;
            if (sm.candidates.size() > 1) {
                ++m.ops["unknown outcome (" + sm.candidates.back().what.substr(0, 5) + ")"];
            }
            for (std::size_t ci = 0; ci < sm.candidates.size(); ++ci) {
                const auto& cand = sm.candidates[ci];
                auto bad = check_sub(name, cand, *audit, *got);
                if (bad.empty()) {
                    matched = true;
                    if (ci > 0) {
                        ++m.ops["unknown outcome: was applied"];
                    }
                    break;
                }
                if (first_bad.empty()) {
                    first_bad = std::move(bad);
                    if (sm.candidates.size() > 1) {
                        first_bad.front() += " (state '" + cand.what + "'; " +
                                             std::to_string(sm.candidates.size()) +
                                             " candidates, none matched)";
                    }
                }
            }
            if (!matched) {
                for (auto& b : first_bad) {
                    violation(b);
                }
            }
            opened.emplace_back(std::move(c), std::move(*got));
        }
        // 4. Ack everything delivered, audit included: every subscription is then acked through
        // the fence.
        if (!ack_all(*ac, "audit", *audit)) {
            violation("audit: verification acks not answered");
        }
        std::size_t i = 0;
        for (auto& [name, sm] : m.subs) {
            if (i >= opened.size()) {
                break;
            }
            if (!ack_all(*opened[i].first, name, opened[i].second)) {
                violation(name + ": verification acks not answered");
            }
            sm.candidates.assign(1, sub_state{});
            sm.candidates.back().acked_below = fence + 1;
            sm.candidates.back().maybe_below = fence + 1;
            ++i;
        }
        m.base = fence + 1;
        m.known_flex_tags.insert("f" + std::to_string(round));
        opened.clear();
        ac.reset();

        // 5. Retention: every subscription is acked through the fence, so one trim (POST .../trim,
        // what the periodic pass does) must bring the first retained entry to exactly fence + 1,
        // and no cursor may be behind it (internalStats).
        std::pair<int, std::string> t;
        for (int attempt = 0; attempt < 3 && t.first != 204; ++attempt) {
            t = http_request(http_port, "POST", admin_path(m.topic) + "/trim", "");
        }
        if (t.first != 204) {
            violation(m.topic + ": trim answered " + std::to_string(t.first));
        }
        check_internal_stats(fence + 1);
    }

    // Parses "ledgers":[{"ledgerId":L,"entries":N,"firstEntry":F,...}] and every cursor's
    // "markDeletePosition":"L:E" from internalStats: every cursor's E + 1 >= the first
    // retained entry F (no cursor behind the retention floor). Run right after a restart, while
    // the cursors lag (the audit acks nothing during the load), and after the verification's
    // trim, when `expect_first` (every cursor acked through the fence) must be F exactly.
    // Returns F (-1 when unknown).
    long long check_internal_stats(std::optional<long long> expect_first = std::nullopt) {
        std::pair<int, std::string> r;
        for (int attempt = 0; attempt < 3 && r.first != 200; ++attempt) {
            r = http_request(http_port, "GET", admin_path(m.topic) + "/internalStats", "");
        }
        if (r.first != 200) {
            violation(m.topic + ": internalStats answered " + std::to_string(r.first));
            return -1;
        }
        long long first = -1;
        for (auto& v : floor_violations(r.second, first)) {
            violation(m.topic + ": " + v);
        }
        if (first < 0) {
            return -1;
        }
        m.first_entry = first;
        if (expect_first && first != *expect_first) {
            violation(m.topic + ": every subscription acked through " +
                      std::to_string(*expect_first - 1) + " and trimmed, but the first retained " +
                      "entry is " + std::to_string(first));
        }
        return first;
    }
};

int usage() {
    std::fprintf(stderr,
                 "usage: broker_campaign --nereus PATH [--kills N] [--seed S] [--work-dir D]\n"
                 "                       [--min-run-ms A] [--max-run-ms B] [--keep]\n");
    return 2;
}

}  // namespace

int main(int argc, char** argv) {
    std::string nereus;
    int kills = 20;
    std::uint64_t seed =
        static_cast<std::uint64_t>(std::chrono::system_clock::now().time_since_epoch().count());
    std::string work;
    int min_run_ms = 50;
    int max_run_ms = 4000;
    bool keep = false;
    std::string node;
    std::string flex_script;
    for (int i = 1; i < argc; ++i) {
        const std::string a = argv[i];
        const auto val = [&]() -> std::string {
            if (i + 1 >= argc) {
                std::exit(usage());
            }
            return argv[++i];
        };
        if (a == "--nereus") {
            nereus = val();
        } else if (a == "--kills") {
            kills = std::atoi(val().c_str());
        } else if (a == "--seed") {
            seed = std::strtoull(val().c_str(), nullptr, 10);
        } else if (a == "--work-dir") {
            work = val();
        } else if (a == "--min-run-ms") {
            min_run_ms = std::atoi(val().c_str());
        } else if (a == "--max-run-ms") {
            max_run_ms = std::atoi(val().c_str());
        } else if (a == "--keep") {
            keep = true;
        } else if (a == "--node") {
            node = val();
        } else if (a == "--flex-script") {
            flex_script = val();
        } else {
            return usage();
        }
    }
    if (nereus.empty() || kills < 0 || min_run_ms < 0 || max_run_ms < min_run_ms) {
        return usage();
    }
    bool made_work = false;
    if (work.empty()) {
        char tmpl[] = "/tmp/nereus-crash-XXXXXX";
        if (::mkdtemp(tmpl) == nullptr) {
            std::perror("mkdtemp");
            return 2;
        }
        work = tmpl;
        made_work = true;
    }
    std::filesystem::create_directories(work);
    const std::string data = work + "/data";
    const std::string log = work + "/broker.log";
    std::printf("crash campaign: kills=%d seed=%llu work=%s\n", kills,
                static_cast<unsigned long long>(seed), work.c_str());
    std::fflush(stdout);

    std::mt19937_64 rng(seed);
    model m;
    m.topic = "crash-t";
    m.audit = "audit";
    for (auto [name, type] : std::vector<std::pair<std::string, std::int32_t>>{
             {"s-ind", 1}, {"s-cum", 0}, {"s-bidx", 2}, {"s-churn", 0}}) {
        m.subs[name].name = name;
        m.subs[name].type = type;
    }
    // The pulsar-flex topic (when node and the pulsar-flex package are there).
    const bool flex = !node.empty() && !flex_script.empty();
    model mf;
    mf.topic = "crash-flex";
    mf.audit = "flex-audit";
    mf.flex = true;
    mf.subs["flex-sub"].name = "flex-sub";
    mf.subs["flex-sub"].type = 1;
    std::printf("pulsar-flex load: %s\n",
                flex ? flex_script.c_str() : "off (no node / pulsar-flex)");
    // Retention active (Pulsar's defaults 0/0: acked data is deleted) with a pass every
    // second, so trims run while the load runs and the floor checks (during the load, after each
    // restart, and after the verification's trim) have something to catch.
    const std::string config = work + "/broker.conf";
    {
        std::FILE* f = std::fopen(config.c_str(), "w");
        if (f == nullptr) {
            std::fprintf(stderr, "campaign: cannot write %s\n", config.c_str());
            return 2;
        }
        std::fputs(
            "defaultRetentionTimeInMinutes=0\n"
            "defaultRetentionSizeInMB=0\n"
            "retentionCheckIntervalInSeconds=1\n",
            f);
        std::fclose(f);
    }
    broker_process broker(nereus, data, log, config);
    const auto t0 = clock_type::now();
    std::uint64_t total_violations = 0;
    std::uint64_t total_receipts = 0;
    std::uint64_t total_acks = 0;
    std::uint64_t recovery_kills = 0;
    std::uint64_t live_checks = 0;  // internalStats floor checks during the load
    int exit_code = 0;

    // Round 0 creates the subscriptions (and the audit) before any message.
    if (!broker.start(60s)) {
        std::fprintf(stderr, "campaign: the broker did not start (log: %s)\n", log.c_str());
        return 2;
    }
    for (model* tm : {&m, &mf}) {
        if (tm->flex && !flex) {
            continue;
        }
        std::vector<std::pair<std::string, std::int32_t>> subs = {{tm->audit, 0}};
        for (const auto& [name, sm] : tm->subs) {
            subs.emplace_back(name, sm.type);
        }
        for (const auto& [name, type] : subs) {
            auto c = wire_client::open(broker.port());
            if (!c || !c->handshake(20) || !subscribe(*c, tm->topic, 1, 1, name, type, 0)) {
                std::fprintf(stderr, "campaign: cannot create subscription %s\n", name.c_str());
                return 2;
            }
        }
    }

    for (int k = 1; k <= kills; ++k) {
        // The load, then the kill at a random moment of it.
        std::atomic<bool> stop{false};
        m.receipts = 0;
        m.acks = 0;
        load_context ctx{m, broker.port(), broker.http_port(), k, stop, rng()};
        std::vector<std::thread> threads;
        const auto spawn = [&](auto f) {
            ctx.seed = rng();
            threads.emplace_back([f, c = ctx]() mutable { f(c); });
        };
        const std::string r = std::to_string(k);
        spawn([r](load_context& c) { run_producer(c, "pa-" + r, false); });
        spawn([r](load_context& c) { run_producer(c, "pb-" + r, true); });
        spawn([](load_context& c) { run_consumer(c, "s-ind", 1, role::individual); });
        spawn([](load_context& c) { run_consumer(c, "s-cum", 0, role::cumulative); });
        spawn([](load_context& c) { run_consumer(c, "s-bidx", 2, role::batch_index); });
        spawn([](load_context& c) { run_churn(c, "s-churn"); });
        // pulsar-flex: a node process, its stdout read by a thread until the kill.
        std::optional<nereus::test::child_process> flex_child;
        std::string flex_out;
        std::thread flex_reader;
        std::atomic<bool> flex_stop{false};
        if (flex) {
            flex_child = nereus::test::child_process::spawn(
                {node, flex_script, std::to_string(broker.port()), std::to_string(k)});
            if (flex_child) {
                flex_reader = std::thread([&] {
                    while (!flex_stop.load() && flex_child->read_until(clock_type::now() + 20ms,
                                                                       [&](std::string_view sv) {
                                                                           flex_out.append(sv);
                                                                       })) {
                    }
                });
            }
        }
        const auto run_for = std::chrono::milliseconds(
            min_run_ms +
            static_cast<int>(rng() % static_cast<std::uint64_t>(max_run_ms - min_run_ms + 1)));
        // While the load runs (and the periodic retention pass trims): internalStats of each
        // topic every ~200 ms, checked against the retention floor. A trim that passed a cursor
        // shows here; a restart would repair it (the ledger's open advances such a cursor).
        std::vector<std::string> live;
        const auto kill_at = clock_type::now() + run_for;
        while (clock_type::now() < kill_at) {
            for (const model* tm : {&m, &mf}) {
                if (tm->flex && !flex) {
                    continue;
                }
                const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
                    kill_at - clock_type::now());
                if (left.count() <= 0) {
                    break;
                }
                auto r = http_request(broker.http_port(), "GET",
                                      admin_path(tm->topic) + "/internalStats", "", left);
                if (r.first == 200) {
                    long long first = -1;
                    for (auto& v : floor_violations(r.second, first)) {
                        live.push_back(tm->topic + " (during the load): " + v);
                    }
                    ++live_checks;
                }
            }
            std::this_thread::sleep_for(
                std::min<clock_type::duration>(200ms, kill_at - clock_type::now()));
        }
        const pid_t pid = broker.pid();
        const double uptime = broker.kill();
        // Workers see the connection end; whatever they read was sent before the kill.
        // Each ends at its connection's end of file (bounded: every wait has a timeout).
        for (auto& t : threads) {
            t.join();
        }
        stop = true;
        std::uint64_t receipts = 0;
        std::uint64_t acks = 0;
        if (flex_child) {
            flex_stop = true;
            flex_reader.join();
            flex_child->kill_and_drain([&](std::string_view sv) { flex_out.append(sv); });
            flex_child.reset();
            // Complete lines only: a line cut by the kill was not confirmed.
            std::size_t at = 0;
            auto& fs = mf.only("flex-sub");
            for (std::size_t eol; (eol = flex_out.find('\n', at)) != std::string::npos;
                 at = eol + 1) {
                const std::string line = flex_out.substr(at, eol - at);
                unsigned long long a = 0;
                unsigned long long b = 0;
                if (std::sscanf(line.c_str(), "R %llu %llu", &a, &b) == 2) {
                    mf.flex_receipts[{"f" + std::to_string(k), a}] = static_cast<std::uint32_t>(b);
                    receipts += b;
                    mf.ops["pulsar-flex receipted messages"] += b;
                } else if (std::sscanf(line.c_str(), "Q %llu", &a) == 1) {
                    fs.maybe.insert(key{a, -1});
                    ++mf.ops["pulsar-flex ack"];
                } else if (std::sscanf(line.c_str(), "A %llu", &a) == 1) {
                    fs.acked.insert(key{a, -1});
                    ++acks;
                    ++mf.ops["pulsar-flex ack confirmed"];
                } else if (std::sscanf(line.c_str(), "N %llu", &a) == 1) {
                    ++mf.ops["pulsar-flex nack"];
                } else if (line.rfind("E ", 0) == 0) {
                    std::fprintf(stderr, "campaign: pulsar-flex load: %s\n", line.c_str());
                }
            }
        }
        {
            std::lock_guard l(m.mu);
            receipts += m.receipts;
            acks += m.acks;
        }
        total_receipts += receipts;
        total_acks += acks;

        // Now and then a second kill while the broker recovers (before it answers).
        std::string recovery_kill;
        if (rng() % 5 == 0) {
            if (!broker.spawn()) {
                std::fprintf(stderr, "campaign: cannot spawn the broker (log: %s)\n", log.c_str());
                exit_code = 2;
                break;
            }
            std::this_thread::sleep_for(std::chrono::milliseconds(rng() % 400));
            const pid_t rpid = broker.pid();
            const double rup = broker.kill();
            char buf[96];
            std::snprintf(buf, sizeof buf, " (+ recovery kill: pid %d uptime %.2fs)",
                          static_cast<int>(rpid), rup);
            recovery_kill = buf;
            ++recovery_kills;
        }

        // Restart and verify.
        if (!broker.start(60s)) {
            std::fprintf(stderr, "campaign: the broker did not restart after kill %d (log: %s)\n",
                         k, log.c_str());
            exit_code = 2;
            break;
        }
        verifier v{m, broker.port(), broker.http_port(), k, {}, {}};
        v.run(k);
        if (flex && v.fatal.empty()) {
            verifier vf{mf, broker.port(), broker.http_port(), k, {}, {}};
            vf.run(k);
            v.violations.insert(v.violations.end(), vf.violations.begin(), vf.violations.end());
            v.fatal = vf.fatal;
        }
        v.violations.insert(v.violations.begin(), live.begin(), live.end());
        total_violations += v.violations.size();
        std::printf("kill %d: pid %d uptime %.2fs receipts %llu acks %llu violations %zu%s\n", k,
                    static_cast<int>(pid), uptime, static_cast<unsigned long long>(receipts),
                    static_cast<unsigned long long>(acks), v.violations.size(),
                    recovery_kill.c_str());
        for (const auto& s : v.violations) {
            std::printf("  violation: %s\n", s.c_str());
        }
        std::fflush(stdout);
        if (!v.fatal.empty()) {
            std::fprintf(stderr, "campaign: %s (log: %s)\n", v.fatal.c_str(), log.c_str());
            exit_code = 2;
            break;
        }
    }
    broker.kill();
    std::string ops;
    for (const auto* tm : {&m, &mf}) {
        for (const auto& [what, n] : tm->ops) {
            ops += (ops.empty() ? "" : ", ") + what + " " + std::to_string(n);
        }
    }
    std::printf("operations: %s; recovery kills %llu\n", ops.c_str(),
                static_cast<unsigned long long>(recovery_kills));
    std::printf("retention: first retained entry %s %lld", m.topic.c_str(), m.first_entry);
    if (flex) {
        std::printf(", %s %lld", mf.topic.c_str(), mf.first_entry);
    }
    std::printf(" (trimmed below it); floor checks during the load %llu\n",
                static_cast<unsigned long long>(live_checks));
    std::printf("kills=%d violations=%llu receipts=%llu acks=%llu seconds=%.1f\n", kills,
                static_cast<unsigned long long>(total_violations),
                static_cast<unsigned long long>(total_receipts),
                static_cast<unsigned long long>(total_acks), seconds_since(t0));
    if (made_work && !keep && total_violations == 0 && exit_code == 0) {
        std::filesystem::remove_all(work);
    }
    if (exit_code != 0) {
        return exit_code;
    }
    return total_violations > 0 ? 1 : 0;
}
