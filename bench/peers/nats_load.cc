// NATS JetStream load generator (nats.c). Producer: js_PublishAsync with at most `window`
// PubAcks outstanding; the PubAck is the receipt (JetStream 2.9 writes to the page cache and
// fsyncs on a 2-minute timer, so the receipt is not fsync-before-ack). Consumer: a durable
// pull consumer (AckExplicit) created before the run, Fetch(1000) and one natsMsg_Ack per
// message (fire-and-forget, as JetStream acks are).
// Ownership: each producer/consumer owns its natsConnection and jsCtx. The PubAck handler runs
// on the library's delivery thread and is the only writer of the producer stats meanwhile.

#include "load.h"
#include <atomic>
#include <cstring>
#include <nats/nats.h>
#include <string>
#include <thread>
#include <vector>

namespace nereus::bench {
namespace {

std::string st_err(natsStatus s, const char* what) {
    return std::string(what) + ": " + natsStatus_GetText(s) + " " + nats_GetLastError(nullptr);
}

struct connection {
    natsConnection* nc = nullptr;
    jsCtx* js = nullptr;
    std::string err;
    connection(const plan& p, jsOptions* jo) {
        const std::string url = "nats://" + p.host + ":" + std::to_string(p.port);
        natsOptions* o = nullptr;
        natsOptions_Create(&o);
        natsOptions_SetURL(o, url.c_str());
        natsOptions_SetMaxPendingMsgs(o, 1000000);
        natsStatus s = natsConnection_Connect(&nc, o);
        natsOptions_Destroy(o);
        if (s != NATS_OK) {
            err = st_err(s, "connect");
            return;
        }
        s = natsConnection_JetStream(&js, nc, jo);
        if (s != NATS_OK)
            err = st_err(s, "jetstream");
    }
    ~connection() {
        if (js)
            jsCtx_Destroy(js);
        if (nc) {
            natsConnection_Close(nc);
            natsConnection_Destroy(nc);
        }
    }
};

struct ack_state {
    producer_stats* st = nullptr;
    std::vector<std::uint64_t>* sent_at = nullptr;
    std::atomic<std::uint64_t> acked{0};
};

void on_puback(jsCtx*, natsMsg* msg, jsPubAck* pa, jsPubAckErr* pae, void* closure) {
    auto* a = static_cast<ack_state*>(closure);
    const auto t = now_ns();
    if (pae != nullptr || pa == nullptr) {
        ++a->st->errors;
    } else {
        std::uint64_t index = 0;
        const char* d = natsMsg_GetData(msg);
        if (natsMsg_GetDataLength(msg) >= 20) {
            std::memcpy(&index, d + 4, 8);
            if (index < a->sent_at->size())
                a->st->publish.add_ns(t - (*a->sent_at)[index]);
        }
    }
    a->st->last_ack_ns = t;
    natsMsg_Destroy(msg);
    a->acked.fetch_add(1, std::memory_order_release);  // last: the producer may return now
}

class nats_producer final : public producer {
public:
    explicit nats_producer(const plan& p) : p_(p) {}

    std::string run(const plan& p, producer_stats& st) override {
        std::vector<std::uint64_t> sent_at(p.count);
        ack_state a;
        a.st = &st;
        a.sent_at = &sent_at;
        jsOptions jo;
        jsOptions_Init(&jo);
        jo.PublishAsync.MaxPending = p.window;
        jo.PublishAsync.AckHandler = on_puback;
        jo.PublishAsync.AckHandlerClosure = &a;
        jo.PublishAsync.StallWait = static_cast<int64_t>(p.timeout * 1000);
        connection c(p, &jo);
        if (!c.err.empty())
            return c.err;
        std::vector<char> buf(p.size, 'x');
        const std::string subj = p.name + ".m";
        st.start_ns = now_ns();
        for (std::uint64_t i = 0; i < p.count; ++i) {
            std::uint64_t now = now_ns();
            const auto t = intended_ns(p, st.start_ns, i, now);
            if (t > now) {
                std::this_thread::sleep_for(std::chrono::nanoseconds(t - now));
            }
            fill_payload(buf.data(), p.size, i, t);
            sent_at[i] = t;
            natsStatus s =
                js_PublishAsync(c.js, subj.c_str(), buf.data(), static_cast<int>(p.size), nullptr);
            if (s != NATS_OK)
                return st_err(s, "publish");
        }
        jsPubOptions po;
        jsPubOptions_Init(&po);
        po.MaxWait = static_cast<int64_t>(p.timeout * 1000);
        natsStatus s = js_PublishAsyncComplete(c.js, &po);
        // js_PublishAsyncComplete can return while the handler of the last PubAck still runs
        // (nats.c counts a publish done before calling its handler); `a`, `sent_at` and the
        // connection must outlive every handler call, so wait for the handlers themselves.
        const std::uint64_t until = now_ns() + static_cast<std::uint64_t>(p.timeout * 1e9);
        while (a.acked.load(std::memory_order_acquire) < p.count && now_ns() < until) {
            std::this_thread::sleep_for(std::chrono::milliseconds(1));
        }
        st.acked = a.acked.load(std::memory_order_acquire);
        if (s != NATS_OK)
            return st_err(s, "publish complete");
        return "";
    }

private:
    plan p_;
};

class nats_consumer final : public consumer {
public:
    explicit nats_consumer(const plan& p) : c_(p, nullptr) {}
    ~nats_consumer() override {
        if (sub_)
            natsSubscription_Destroy(sub_);
    }

    std::string run(const plan& p,
                    consumer_stats& st,
                    const std::function<void()>& ready) override {
        if (!c_.err.empty())
            return c_.err;
        const std::string subj = p.name + ".m";
        jsErrCode jerr{};
        natsStatus s = js_PullSubscribe(&sub_, c_.js, subj.c_str(), "g", nullptr, nullptr, &jerr);
        if (s != NATS_OK)
            return st_err(s, "pull subscribe");
        ready();
        if (st.start_ns == 0)
            st.start_ns = now_ns();
        const std::uint64_t deadline = now_ns() + static_cast<std::uint64_t>(p.timeout * 1e9);
        while (st.distinct < p.count) {
            if (now_ns() > deadline)
                return "timeout";
            natsMsgList list{};
            s = natsSubscription_Fetch(&list, sub_, 1000, 200, &jerr);
            if (s == NATS_TIMEOUT)
                continue;
            if (s != NATS_OK)
                return st_err(s, "fetch");
            const auto now = now_ns();
            for (int i = 0; i < list.Count; ++i) {
                natsMsg* m = list.Msgs[i];
                st.on_message(natsMsg_GetData(m),
                              static_cast<std::size_t>(natsMsg_GetDataLength(m)), now);
                natsMsg_Ack(m, nullptr);
            }
            natsMsgList_Destroy(&list);
        }
        natsConnection_Flush(c_.nc);
        return "";
    }

private:
    connection c_;
    natsSubscription* sub_ = nullptr;
};

}  // namespace
}  // namespace nereus::bench

int main(int argc, char** argv) {
    using namespace nereus::bench;
    // Creates the stream and its durable consumer before the run.
    const auto setup = [](const plan& p) -> std::string {
        connection c(p, nullptr);
        if (!c.err.empty())
            return c.err;
        const std::string subj = p.name + ".m";
        const char* subjects[] = {subj.c_str()};
        jsStreamConfig sc;
        jsStreamConfig_Init(&sc);
        sc.Name = p.name.c_str();
        sc.Subjects = subjects;
        sc.SubjectsLen = 1;
        sc.Storage = js_FileStorage;
        sc.Replicas = 1;
        jsErrCode jerr{};
        jsStreamInfo* si = nullptr;
        natsStatus s = js_AddStream(&si, c.js, &sc, nullptr, &jerr);
        if (s != NATS_OK)
            return st_err(s, "add stream");
        jsStreamInfo_Destroy(si);
        jsConsumerConfig cc;
        jsConsumerConfig_Init(&cc);
        cc.Durable = "g";
        cc.AckPolicy = js_AckExplicit;
        cc.DeliverPolicy = js_DeliverAll;
        cc.MaxAckPending = 20000;
        jsConsumerInfo* ci = nullptr;
        s = js_AddConsumer(&ci, c.js, p.name.c_str(), &cc, nullptr, &jerr);
        if (s != NATS_OK)
            return st_err(s, "add consumer");
        jsConsumerInfo_Destroy(ci);
        return "";
    };
    nats_Open(-1);
    const int rc = run_main<nats_producer, nats_consumer>(argc, argv, setup);
    nats_Close();
    return rc;
}
