// Blocking storage calls run on the blocking pool, not on the io threads: while a topic open or
// a dispatch cursor read is held on a latch, another connection on the same (single) io thread
// is served. No timing assertions beyond "completes before the latch is released"; every wait
// is bounded.

#include "nereus/broker/memory_backend.h"
#include "nereus/broker/server.h"

#include <gtest/gtest.h>

#include "support/wire_client.h"
#include <condition_variable>
#include <memory>
#include <mutex>

namespace nereus::broker::test {
namespace {

using proto::command_type;

// A latch the storage wrappers block on: entered() tells a call is held, release() lets every
// held (and later) call through. Waits are bounded so a broken broker fails, never hangs.
class gate {
public:
    void hold() {
        std::unique_lock lock(mu_);
        ++entered_;
        cv_.notify_all();
        cv_.wait_for(lock, 10s, [&] { return released_; });
    }
    bool wait_entered(std::chrono::milliseconds timeout = 5s) {
        std::unique_lock lock(mu_);
        return cv_.wait_for(lock, timeout, [&] { return entered_ > 0; });
    }
    int entered() {
        std::lock_guard lock(mu_);
        return entered_;
    }
    void release() {
        std::lock_guard lock(mu_);
        released_ = true;
        cv_.notify_all();
    }

private:
    std::mutex mu_;
    std::condition_variable cv_;
    int entered_ = 0;
    bool released_ = false;
};

// Cursor whose read() of subscription "slow-sub" waits on the gate.
class gated_cursor : public subscription_cursor {
public:
    gated_cursor(std::shared_ptr<subscription_cursor> c, gate& g) : c_(std::move(c)), g_(g) {}
    const std::string& name() const override { return c_->name(); }
    bool durable() const override { return c_->durable(); }
    result<std::vector<dispatch_entry>> read(std::size_t max_entries) override {
        if (c_->name() == "slow-sub") {
            g_.hold();
        }
        return c_->read(max_entries);
    }
    void rewind() override { c_->rewind(); }
    void ack(ack_fence f, std::uint64_t entry_id, ack_callback done) override {
        c_->ack(f, entry_id, std::move(done));
    }
    void ack_batch_index(ack_fence f,
                         std::uint64_t entry_id,
                         std::uint32_t batch_size,
                         std::span<const std::int64_t> remaining,
                         ack_callback done) override {
        c_->ack_batch_index(f, entry_id, batch_size, remaining, std::move(done));
    }
    void ack_cumulative(ack_fence f, std::uint64_t entry_id, ack_callback done) override {
        c_->ack_cumulative(f, entry_id, std::move(done));
    }
    result<ack_fence> seek(const seek_target& target) override { return c_->seek(target); }
    ack_fence current_fence() const override { return c_->current_fence(); }
    std::optional<position> mark_delete_position() const override {
        return c_->mark_delete_position();
    }
    std::uint64_t backlog() const override { return c_->backlog(); }
    void set_connected(bool connected) override { c_->set_connected(connected); }
    void record_redelivery(std::uint64_t entry_id) override { c_->record_redelivery(entry_id); }
    std::uint32_t redelivery_count(std::uint64_t entry_id) const override {
        return c_->redelivery_count(entry_id);
    }
    std::uint64_t next_read_position() override { return c_->next_read_position(); }
    bool is_acked(std::uint64_t entry_id) const override { return c_->is_acked(entry_id); }
    void skip_read_to(std::uint64_t entry_id) override { c_->skip_read_to(entry_id); }
    cursor_details details() const override { return c_->details(); }
    result<void> set_properties(std::map<std::string, std::string> p) override {
        return c_->set_properties(std::move(p));
    }

private:
    std::shared_ptr<subscription_cursor> c_;
    gate& g_;
};

class gated_store : public topic_store {
public:
    gated_store(std::shared_ptr<topic_store> s, gate& g) : s_(std::move(s)), g_(g) {}
    const std::string& name() const override { return s_->name(); }
    std::uint64_t ledger_id() const override { return s_->ledger_id(); }
    void append(std::span<const std::byte> entry,
                const append_info& info,
                append_callback done) override {
        s_->append(entry, info, std::move(done));
    }
    result<std::shared_ptr<subscription_cursor>> open_subscription(const std::string& name,
                                                                   const subscription_start& start,
                                                                   bool durable) override {
        auto c = s_->open_subscription(name, start, durable);
        if (!c) {
            return c;
        }
        return std::shared_ptr<subscription_cursor>(
            std::make_shared<gated_cursor>(std::move(*c), g_));
    }
    result<void> delete_subscription(const std::string& name) override {
        return s_->delete_subscription(name);
    }
    std::vector<std::string> subscription_names() const override {
        return s_->subscription_names();
    }
    std::optional<last_entry_info> last_entry() const override { return s_->last_entry(); }
    topic_details details() const override { return s_->details(); }
    result<void> close() override { return s_->close(); }

private:
    std::shared_ptr<topic_store> s_;
    gate& g_;
};

// Memory backend whose open_topic of a name containing "slow" waits on the gate.
class gated_backend : public topic_backend {
public:
    explicit gated_backend(gate& g) : b_(make_memory_backend()), g_(g) {}
    result<std::shared_ptr<topic_store>> open_topic(const std::string& name, bool create) override {
        if (name.find("slow") != std::string::npos) {
            g_.hold();
        }
        auto s = b_->open_topic(name, create);
        if (!s) {
            return s;
        }
        return std::shared_ptr<topic_store>(std::make_shared<gated_store>(std::move(*s), g_));
    }
    std::vector<std::string> topic_names() const override { return b_->topic_names(); }
    result<void> delete_topic(const std::string& name) override { return b_->delete_topic(name); }
    result<std::optional<std::string>> get_admin_record(const std::string& key) const override {
        return b_->get_admin_record(key);
    }
    result<bool> create_admin_record(const std::string& key, const std::string& value) override {
        return b_->create_admin_record(key, value);
    }
    result<bool> replace_admin_record(const std::string& key,
                                      const std::string& expected,
                                      const std::string& value) override {
        return b_->replace_admin_record(key, expected, value);
    }
    result<bool> remove_admin_record(const std::string& key) override {
        return b_->remove_admin_record(key);
    }
    result<std::vector<std::pair<std::string, std::string>>> list_admin_records(
        const std::string& prefix) const override {
        return b_->list_admin_records(prefix);
    }
    result<void> put_object(const std::string& name, std::span<const std::byte> bytes) override {
        return b_->put_object(name, bytes);
    }
    result<std::vector<std::byte>> get_object(const std::string& name) override {
        return b_->get_object(name);
    }
    result<void> remove_object(const std::string& name) override { return b_->remove_object(name); }

private:
    std::unique_ptr<topic_backend> b_;
    gate& g_;
};

class BlockingPoolTest : public ::testing::Test {
protected:
    void SetUp() override {
        broker_options o;
        o.port = 0;
        o.bind_address = "127.0.0.1";
        o.io_threads = 1;  // every connection shares the one io thread
        o.blocking_threads = 2;
        backend_ = std::make_unique<gated_backend>(gate_);
        server_ = std::make_unique<server>(o, *backend_);
        ASSERT_TRUE(server_->start().has_value());
    }
    void TearDown() override {
        gate_.release();
        if (server_) {
            server_->stop();
        }
    }

    std::unique_ptr<wire_client> connected() {
        auto c = wire_client::open(server_->port());
        EXPECT_TRUE(c);
        if (c) {
            EXPECT_TRUE(c->handshake());
        }
        return c;
    }
    static void send_producer(wire_client& c, std::string_view topic, std::uint64_t id) {
        proto::producer_args a;
        a.topic = topic;
        a.producer_id = id;
        a.request_id = 100 + id;
        c.send([&](proto::frame_buffer& b) { return c.writer().producer(b, a).has_value(); });
    }
    // On another connection: PING → PONG, and PRODUCER + SEND → receipts on a fast topic.
    static void served(wire_client& c, std::string_view topic) {
        ASSERT_TRUE(c.send([&](proto::frame_buffer& b) { return c.writer().ping(b).has_value(); }));
        ASSERT_TRUE(c.expect(command_type::pong));
        send_producer(c, topic, 7);
        ASSERT_TRUE(c.expect(command_type::producer_success));
        for (std::uint64_t i = 0; i < 3; ++i) {
            ASSERT_TRUE(c.send_message(7, i, "fast"));
        }
        for (std::uint64_t i = 0; i < 3; ++i) {
            auto r = c.expect(command_type::send_receipt);
            ASSERT_TRUE(r);
            EXPECT_EQ(r->cmd.send_receipt().sequence_id(), i);
        }
    }

    gate gate_;
    std::unique_ptr<topic_backend> backend_;
    std::unique_ptr<server> server_;
};

TEST_F(BlockingPoolTest, SlowTopicOpenDoesNotStallOtherConnections) {
    auto a = connected();
    auto b = connected();
    ASSERT_TRUE(a && b);
    send_producer(*a, "persistent://public/default/slow-open", 1);
    ASSERT_TRUE(gate_.wait_entered());  // the open is held on the pool

    served(*b, "persistent://public/default/fast-1");

    // A second PRODUCER for the held topic (another connection) waits for the same open.
    auto c = connected();
    ASSERT_TRUE(c);
    send_producer(*c, "persistent://public/default/slow-open", 2);

    gate_.release();
    auto r = a->expect(command_type::producer_success);
    ASSERT_TRUE(r);
    EXPECT_EQ(r->cmd.producer_success().request_id(), 101U);
    ASSERT_TRUE(c->expect(command_type::producer_success));
    ASSERT_TRUE(a->send_message(1, 0, "slow"));
    ASSERT_TRUE(a->expect(command_type::send_receipt));
    EXPECT_EQ(gate_.entered(), 1);  // opened once for both connections
}

TEST_F(BlockingPoolTest, SlowDispatchReadDoesNotStallOtherConnections) {
    const std::string_view topic = "persistent://public/default/reads";
    auto a = connected();
    auto b = connected();
    ASSERT_TRUE(a && b);
    send_producer(*a, topic, 1);
    ASSERT_TRUE(a->expect(command_type::producer_success));
    ASSERT_TRUE(a->send_message(1, 0, "held"));
    ASSERT_TRUE(a->expect(command_type::send_receipt));

    proto::subscribe_args s;
    s.topic = topic;
    s.subscription = "slow-sub";
    s.sub_type = 0;
    s.consumer_id = 5;
    s.request_id = 9;
    s.consumer_name = "c";
    s.initial_position = 1;  // earliest
    ASSERT_TRUE(
        a->send([&](proto::frame_buffer& f) { return a->writer().subscribe(f, s).has_value(); }));
    ASSERT_TRUE(a->expect(command_type::success));
    ASSERT_TRUE(
        a->send([&](proto::frame_buffer& f) { return a->writer().flow(f, 5, 10).has_value(); }));
    ASSERT_TRUE(gate_.wait_entered());  // the dispatch read is held on the pool

    served(*b, "persistent://public/default/fast-2");

    gate_.release();
    auto m = a->expect(command_type::message);
    ASSERT_TRUE(m);
    EXPECT_EQ(m->payload, "held");
}

}  // namespace
}  // namespace nereus::broker::test
