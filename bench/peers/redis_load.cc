// Redis Streams load generator (hiredis). Producer: pipelined XADDs, at most `window` in
// flight, each receipted by its reply (with `appendfsync always` Redis fdatasyncs the AOF
// before it writes the replies of an event-loop pass). Consumer: XREADGROUP COUNT 1000 on a
// consumer group created before the run, one XACK per batch carrying every id (like Pulsar's
// ack grouping), pipelined with the next XREADGROUP; the XACK reply is checked.
// Ownership: each producer/consumer owns its redisContext. Not thread-safe per object.

#include "load.h"
#include <cstring>
#include <ctime>
#include <hiredis/hiredis.h>
#include <poll.h>
#include <string>
#include <vector>

namespace nereus::bench {
namespace {

redisContext* connect(const plan& p, std::string& err) {
    redisContext* c = redisConnect(p.host.c_str(), p.port);
    if (c == nullptr || c->err) {
        err = c ? c->errstr : "redisConnect failed";
        if (c)
            redisFree(c);
        return nullptr;
    }
    return c;
}

class redis_producer final : public producer {
public:
    explicit redis_producer(const plan& p) { c_ = connect(p, err_); }
    ~redis_producer() override {
        if (c_)
            redisFree(c_);
    }

    std::string run(const plan& p, producer_stats& st) override {
        if (!c_)
            return err_;
        const char* argv[5] = {"XADD", p.name.c_str(), "*", "d", nullptr};
        const size_t argl[5] = {4, p.name.size(), 1, 1, p.size};
        send_window w(p, st);
        const auto append = [&](const std::vector<char>& buf) -> std::string {
            argv[4] = buf.data();
            if (redisAppendCommandArgv(c_, 5, argv, argl) != REDIS_OK)
                return c_->errstr;
            return "";
        };
        while (!w.done()) {
            const auto now = now_ns();
            if (w.timed_out(now))
                return "timeout";
            if (auto e = w.send_due(now, append); !e.empty())
                return e;
            int done = 0;
            while (!done) {
                if (redisBufferWrite(c_, &done) != REDIS_OK)
                    return c_->errstr;
            }
            // Sleep until a reply arrives or the next send is due, to the nanosecond (as the
            // other generators and `nereus perf` do). A millisecond poll timeout would round a
            // 0.2 ms wait at 5,000 msg/s down to 0 and spin a core, which measures a client
            // that never sleeps: replies seen with no wake-up, a core taken from the server.
            const auto next = w.next_send_in();
            if (w.nothing_in_flight() && !next)
                continue;
            timespec ts{};
            if (next) {
                ts.tv_sec = static_cast<time_t>(*next / 1000000000ULL);
                ts.tv_nsec = static_cast<long>(*next % 1000000000ULL);
            }
            pollfd pfd{c_->fd, POLLIN, 0};
            if (ppoll(&pfd, 1, next ? &ts : nullptr, nullptr) <= 0)
                continue;
            if (redisBufferRead(c_) != REDIS_OK)
                return c_->errstr;
            void* r = nullptr;
            while (redisReaderGetReply(c_->reader, &r) == REDIS_OK && r != nullptr) {
                auto* rep = static_cast<redisReply*>(r);
                const auto t = now_ns();
                if (rep->type == REDIS_REPLY_ERROR) {
                    w.failed();
                } else {
                    w.receipt(t);
                }
                st.last_ack_ns = t;
                freeReplyObject(rep);
                r = nullptr;
            }
        }
        return "";
    }

private:
    redisContext* c_ = nullptr;
    std::string err_;
};

class redis_consumer final : public consumer {
public:
    explicit redis_consumer(const plan& p) { c_ = connect(p, err_); }
    ~redis_consumer() override {
        if (c_)
            redisFree(c_);
    }

    std::string run(const plan& p,
                    consumer_stats& st,
                    const std::function<void()>& ready) override {
        if (!c_)
            return err_;
        ready();
        if (st.start_ns == 0)
            st.start_ns = now_ns();
        const std::uint64_t deadline = now_ns() + static_cast<std::uint64_t>(p.timeout * 1e9);
        std::vector<const char*> argv;
        std::vector<size_t> argl;
        argv.reserve(1003);
        argl.reserve(1003);
        const char* rd[] = {"XREADGROUP", "GROUP",        "g", "c", "COUNT", "1000", "BLOCK", "100",
                            "STREAMS",    p.name.c_str(), ">"};
        size_t rdl[11];
        for (int i = 0; i < 11; ++i)
            rdl[i] = strlen(rd[i]);
        redisAppendCommandArgv(c_, 11, rd, rdl);
        redisReply* prev = nullptr;  // the batch whose ids the pending XACK references
        bool ack_pending = false;
        while (true) {
            if (ack_pending) {
                void* r = nullptr;
                if (redisGetReply(c_, &r) != REDIS_OK)
                    return c_->errstr;
                auto* rep = static_cast<redisReply*>(r);
                if (rep->type != REDIS_REPLY_INTEGER)
                    ++st.errors;
                freeReplyObject(rep);
                ack_pending = false;
                if (prev) {
                    freeReplyObject(prev);
                    prev = nullptr;
                }
            }
            if (st.distinct >= p.count)
                break;
            if (now_ns() > deadline)
                return "timeout";
            void* r = nullptr;
            if (redisGetReply(c_, &r) != REDIS_OK)
                return c_->errstr;
            auto* rep = static_cast<redisReply*>(r);
            const auto now = now_ns();
            argv.assign({"XACK", p.name.c_str(), "g"});
            argl.assign({4, p.name.size(), 1});
            if (rep->type == REDIS_REPLY_ARRAY && rep->elements == 1) {
                redisReply* entries = rep->element[0]->element[1];
                for (size_t i = 0; i < entries->elements; ++i) {
                    redisReply* e = entries->element[i];
                    redisReply* fields = e->element[1];
                    if (fields->elements >= 2) {
                        st.on_message(fields->element[1]->str, fields->element[1]->len, now);
                    }
                    argv.push_back(e->element[0]->str);
                    argl.push_back(e->element[0]->len);
                }
            } else if (rep->type == REDIS_REPLY_ERROR) {
                std::string e = rep->str;
                freeReplyObject(rep);
                return e;
            }
            if (argv.size() > 3) {
                redisAppendCommandArgv(c_, static_cast<int>(argv.size()), argv.data(), argl.data());
                ack_pending = true;
                prev = rep;
            } else {
                freeReplyObject(rep);
            }
            if (st.distinct + 0 < p.count) {
                redisAppendCommandArgv(c_, 11, rd, rdl);
            }
        }
        return "";
    }

private:
    redisContext* c_ = nullptr;
    std::string err_;
};

}  // namespace
}  // namespace nereus::bench

int main(int argc, char** argv) {
    using namespace nereus::bench;
    // Creates the stream and its consumer group before the run.
    const auto setup = [](const plan& p) -> std::string {
        std::string err;
        redisContext* c = connect(p, err);
        if (!c)
            return err;
        auto* r = static_cast<redisReply*>(
            redisCommand(c, "XGROUP CREATE %s g $ MKSTREAM", p.name.c_str()));
        std::string e;
        if (!r)
            e = c->errstr;
        else if (r->type == REDIS_REPLY_ERROR)
            e = r->str;
        if (r)
            freeReplyObject(r);
        redisFree(c);
        return e;
    };
    return run_main<redis_producer, redis_consumer>(argc, argv, setup);
}
