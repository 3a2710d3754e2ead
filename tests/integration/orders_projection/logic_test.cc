// The example's application logic, without a broker: the orders/v1 codec (only the admitted
// format decodes), the dump/digest format, and order_projection over the real SQLite
// repository — redeliveries are recognised by apply_once, and a doubly applied or lost update
// is visible in the rows (the counted version), which is what makes the self-check able to
// fail.

#include "nereus/events/errc.h"

#include <gtest/gtest.h>

#include "order.h"
#include "order_projection.h"
#include "state.h"
#include <filesystem>
#include <unistd.h>

namespace ev = nereus::events;
using orders::order;

namespace {

std::span<const std::byte> bytes(const std::string& s) {
    return {reinterpret_cast<const std::byte*>(s.data()), s.size()};
}

class temp_dir {
public:
    temp_dir() {
        path_ = std::filesystem::temp_directory_path() /
                ("orders-logic-" + std::to_string(::getpid()) + "-" + std::to_string(counter_++));
        std::filesystem::create_directories(path_);
    }
    ~temp_dir() { std::filesystem::remove_all(path_); }
    std::string file(const std::string& name) const { return (path_ / name).string(); }

private:
    static inline int counter_ = 0;
    std::filesystem::path path_;
};

ev::operation op_upsert(const std::string& key) {
    return {ev::operation::kind::upsert, key};
}
ev::operation op_remove(const std::string& key) {
    return {ev::operation::kind::remove, key};
}

}  // namespace

TEST(OrderCodec, CanonicalRoundTrip) {
    const order o{"o-00001", 3, "paid", 1250};
    const std::string json = orders::encode_order(o);
    EXPECT_EQ(
        json,
        R"({"schema":"orders/v1","id":"o-00001","version":3,"status":"paid","amount_cents":1250})");
    auto back = orders::decode_order(std::string_view(json));
    ASSERT_TRUE(back);
    EXPECT_EQ(*back, o);
    // Field order and spaces do not matter on input; the encoding is canonical.
    auto loose = orders::decode_order(std::string_view(
        R"({ "amount_cents": 1250, "status": "paid", "version": 3, "id": "o-00001", "schema": "orders/v1" })"));
    ASSERT_TRUE(loose);
    EXPECT_EQ(orders::encode_order(*loose), json);
}

TEST(OrderCodec, OnlyTheAdmittedFormatDecodes) {
    using orders::errc;
    auto code = [](std::string_view s) {
        auto r = orders::decode_order(s);
        return r ? errc::success : static_cast<errc>(r.error().value());
    };
    EXPECT_EQ(code("not json"), errc::not_json);
    EXPECT_EQ(code("[1,2]"), errc::not_json);
    EXPECT_EQ(code(R"({"id":"o-1","version":1,"status":"new","amount_cents":1})"),
              errc::unknown_schema);
    EXPECT_EQ(
        code(R"({"schema":"orders/v2","id":"o-1","version":1,"status":"new","amount_cents":1})"),
        errc::unknown_schema);
    EXPECT_EQ(code(R"({"schema":"orders/v1","id":"o-1","version":1,"status":"new"})"),
              errc::bad_field);
    EXPECT_EQ(
        code(R"({"schema":"orders/v1","id":"o-1","version":"1","status":"new","amount_cents":1})"),
        errc::bad_field);
    EXPECT_EQ(
        code(R"({"schema":"orders/v1","id":"o-1","version":0,"status":"new","amount_cents":1})"),
        errc::bad_field);
    EXPECT_EQ(
        code(
            R"({"schema":"orders/v1","id":"o-1","version":1,"status":"new","amount_cents":1,"x":2})"),
        errc::bad_field);
    EXPECT_EQ(
        code(R"({"schema":"orders/v1","id":"o-1","version":1,"status":"new","amount_cents":1})"),
        errc::success);
}

TEST(State, DigestAndDifferences) {
    orders::state a{{"o-1", "A"}, {"o-2", "B"}};
    orders::state b = a;
    EXPECT_EQ(orders::digest(a), orders::digest(b));
    EXPECT_EQ(orders::digest(a).size(), 16u);
    EXPECT_TRUE(orders::differences(a, b, 10).empty());
    b["o-2"] = "C";
    b["o-3"] = "D";
    a["o-0"] = "Z";
    EXPECT_NE(orders::digest(a), orders::digest(b));
    const auto d = orders::differences(a, b, 10);
    ASSERT_EQ(d.size(), 3u);
    EXPECT_EQ(d[0], "extra in projection: Z");
    EXPECT_EQ(d[1], "differs: projection B source C");
    EXPECT_EQ(d[2], "missing in projection: D");
    EXPECT_EQ(orders::differences(a, b, 1).size(), 1u);
    EXPECT_EQ(orders::lines(a), (std::vector<std::string>{"Z", "A", "B"}));
}

TEST(OrderProjection, SnapshotThenEventsOnceWithCountedVersions) {
    temp_dir dir;
    const std::string db = dir.file("projection.db");
    auto p = orders::order_projection::open(db);
    ASSERT_TRUE(p);
    const std::vector<std::pair<std::string, std::string>> image{
        {"o-1", orders::encode_order({"o-1", 4, "paid", 10})},
        {"o-2", orders::encode_order({"o-2", 1, "new", 20})}};
    const ev::cursor barrier{0, 7, 100};
    ASSERT_TRUE(p->replace_snapshot(std::span(&barrier, 1), image));
    EXPECT_EQ(p->rows().size(), 2u);

    // Update o-1 (source version 5), delete o-2, create o-3.
    const std::string v5 = orders::encode_order({"o-1", 5, "packed", 11});
    const std::string c3 = orders::encode_order({"o-3", 1, "new", 30});
    auto r = p->apply({0, 7, 101}, op_upsert("o-1"), bytes(v5));
    ASSERT_TRUE(r);
    EXPECT_EQ(*r, ev::apply_outcome::applied);
    ASSERT_TRUE(p->apply({0, 7, 102}, op_remove("o-2"), {}));
    ASSERT_TRUE(p->apply({0, 7, 103}, op_upsert("o-3"), bytes(c3)));
    const orders::state want{{"o-1", v5}, {"o-3", c3}};
    EXPECT_EQ(p->rows(), want);

    // A redelivery of the same cursors (a crash between apply and ack) changes nothing.
    auto again = p->apply({0, 7, 101}, op_upsert("o-1"), bytes(v5));
    ASSERT_TRUE(again);
    EXPECT_EQ(*again, ev::apply_outcome::already_applied);
    EXPECT_EQ(*p->apply({0, 7, 103}, op_upsert("o-3"), bytes(c3)),
              ev::apply_outcome::already_applied);
    EXPECT_EQ(p->rows(), want);

    // Reopened (a new process): the same rows, and the mirror continues the count.
    auto reopened = orders::order_projection::open(db);
    ASSERT_TRUE(reopened);
    EXPECT_EQ(reopened->rows(), want);
    auto dumped = orders::order_projection::read_state(db);
    ASSERT_TRUE(dumped);
    EXPECT_EQ(*dumped, want);
}

TEST(OrderProjection, DoublyAppliedOrLostUpdatesShowInTheRows) {
    temp_dir dir;
    auto p = orders::order_projection::open(dir.file("projection.db"));
    ASSERT_TRUE(p);
    const ev::cursor barrier{0, 1, 10};
    ASSERT_TRUE(p->replace_snapshot(std::span(&barrier, 1), {}));
    const std::string v1 = orders::encode_order({"o-9", 1, "new", 5});
    const std::string v2 = orders::encode_order({"o-9", 2, "paid", 5});
    ASSERT_TRUE(p->apply({0, 1, 11}, op_upsert("o-9"), bytes(v1)));
    // The same update applied again under another cursor (what a projection without apply_once
    // idempotency does on a redelivery): the counted version runs ahead of the source's.
    ASSERT_TRUE(p->apply({0, 1, 12}, op_upsert("o-9"), bytes(v1)));
    ASSERT_TRUE(p->apply({0, 1, 13}, op_upsert("o-9"), bytes(v2)));
    const orders::state source{{"o-9", v2}};
    EXPECT_NE(p->rows(), source);
    EXPECT_EQ(p->rows().at("o-9"), orders::encode_order({"o-9", 3, "paid", 5}));

    // A lost update: v2 applied without v1 before it counts version 1.
    temp_dir dir2;
    auto q = orders::order_projection::open(dir2.file("projection.db"));
    ASSERT_TRUE(q);
    ASSERT_TRUE(q->replace_snapshot(std::span(&barrier, 1), {}));
    ASSERT_TRUE(q->apply({0, 1, 13}, op_upsert("o-9"), bytes(v2)));
    EXPECT_NE(q->rows(), source);
}

TEST(OrderProjection, RefusesWhatIsNotOrdersV1) {
    temp_dir dir;
    auto p = orders::order_projection::open(dir.file("projection.db"));
    ASSERT_TRUE(p);
    const ev::cursor barrier{0, 1, 10};
    const std::vector<std::pair<std::string, std::string>> bad{{"o-1", "{\"id\":\"o-1\"}"}};
    EXPECT_FALSE(p->replace_snapshot(std::span(&barrier, 1), bad));
    ASSERT_TRUE(p->replace_snapshot(std::span(&barrier, 1), {}));
    EXPECT_FALSE(p->apply({0, 1, 11}, op_upsert("o-1"), bytes("garbage")));
    // The key must be the order's id.
    EXPECT_FALSE(
        p->apply({0, 1, 11}, op_upsert("o-2"), bytes(orders::encode_order({"o-1", 1, "new", 1}))));
    EXPECT_TRUE(p->rows().empty());
    auto applied = p->applied(0);
    ASSERT_TRUE(applied && *applied);
    EXPECT_EQ((*applied)->sequence, 10u);  // nothing was recorded for the refused events
}
