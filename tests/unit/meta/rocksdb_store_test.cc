// rocksdb_store specifics: corruption is reported (never decoded), verify, open refusals.

#include "nereus/meta/rocksdb_store.h"

#include "nereus/meta/errc.h"
#include "nereus/meta/record_format.h"
#include "nereus/meta/sync.h"
#include "nereus/meta/verify.h"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include "unit/meta/support/temp_dir.h"
#include <algorithm>
#include <memory>
#include <rocksdb/db.h>
#include <rocksdb/options.h>
#include <string>

namespace nereus::meta::test {
namespace {

using namespace std::chrono_literals;

// Direct access to the RocksDB directory, to damage it the way a disk or a bug would.
class raw_db {
public:
    explicit raw_db(const std::string& dir) {
        rocksdb::Options o;
        o.create_if_missing = true;
        rocksdb::DB* db = nullptr;
        const auto s = rocksdb::DB::Open(o, dir, &db);
        EXPECT_TRUE(s.ok()) << s.ToString();
        db_.reset(db);
    }
    std::string get(const std::string& key) {
        std::string v;
        const auto s = db_->Get(rocksdb::ReadOptions(), key, &v);
        EXPECT_TRUE(s.ok()) << key << ": " << s.ToString();
        return v;
    }
    void put(const std::string& key, const std::string& value) {
        rocksdb::WriteOptions wo;
        wo.sync = true;
        ASSERT_TRUE(db_->Put(wo, key, value).ok());
    }
    void del(const std::string& key) {
        rocksdb::WriteOptions wo;
        wo.sync = true;
        ASSERT_TRUE(db_->Delete(wo, key).ok());
    }
    void flip(const std::string& key, std::size_t byte) {
        std::string v = get(key);
        ASSERT_LT(byte, v.size());
        v[byte] = static_cast<char>(v[byte] ^ 0x10);
        put(key, v);
    }
    std::string first_key_with_prefix(const std::string& prefix) {
        std::unique_ptr<rocksdb::Iterator> it(db_->NewIterator(rocksdb::ReadOptions()));
        it->Seek(prefix);
        if (!it->Valid() || !it->key().starts_with(prefix)) {
            return {};
        }
        return it->key().ToString();
    }

private:
    std::unique_ptr<rocksdb::DB> db_;
};

class RocksdbStore : public ::testing::TestWithParam<std::size_t> {
protected:
    std::unique_ptr<rocksdb_store> open_store() {
        auto s = rocksdb_store::open(path_, rocksdb_store_options{.max_group = GetParam()});
        EXPECT_TRUE(s.has_value()) << s.error().message();
        return s ? std::move(*s) : nullptr;
    }

    temp_dir dir_;
    std::string path_ = dir_.sub("store");
};

bool has_problem(const verify_report& rep,
                 verify_area area,
                 const std::string& key,
                 const std::string& reason_part) {
    return std::any_of(rep.problems.begin(), rep.problems.end(), [&](const verify_problem& p) {
        return p.area == area && p.key == key && p.reason.find(reason_part) != std::string::npos;
    });
}

TEST_P(RocksdbStore, CorruptRecordIsAnErrorNeverAnotherValidState) {
    {
        auto st = open_store();
        ASSERT_TRUE(st);
        ASSERT_TRUE(create_sync(*st, "cursor/a", "state-a").value().applied);
        ASSERT_TRUE(create_sync(*st, "cursor/b", "state-b").value().applied);
        ASSERT_TRUE(create_sync(*st, "cursor/c", "state-c").value().applied);
    }
    {
        raw_db raw(path_);
        raw.flip(format::data_key("cursor/a"), format::record_header_size + 2);  // in the value
        raw.flip(format::data_key("cursor/c"), 6);  // in the revision: a plausible other version
    }
    auto st = open_store();
    ASSERT_TRUE(st);
    for (const char* key : {"cursor/a", "cursor/c"}) {
        auto g = get_sync(*st, key);
        ASSERT_FALSE(g.has_value()) << key << " decoded as " << (*g)->value;
        EXPECT_EQ(g.error(), errc::corrupt_record);
        auto cas = cas_sync(*st, key, any_version, "overwrite");
        ASSERT_FALSE(cas.has_value());
        EXPECT_EQ(cas.error(), errc::corrupt_record);
    }
    auto listed = list_sync(*st, "cursor/");
    ASSERT_FALSE(listed.has_value());
    EXPECT_EQ(listed.error(), errc::corrupt_record);
    // Undamaged keys keep working.
    auto b = get_sync(*st, "cursor/b");
    ASSERT_TRUE(b && *b);
    EXPECT_EQ((*b)->value, "state-b");
    auto cas_b = cas_sync(*st, "cursor/b", (*b)->ver, "state-b2");
    ASSERT_TRUE(cas_b && cas_b->applied);
    st.reset();

    auto rep = verify_rocksdb_store(path_);
    ASSERT_TRUE(rep.has_value()) << rep.error().message();
    EXPECT_FALSE(rep->ok());
    EXPECT_EQ(rep->problems.size(), 2u);
    EXPECT_TRUE(has_problem(*rep, verify_area::data, "cursor/a", "crc32c mismatch"));
    EXPECT_TRUE(has_problem(*rep, verify_area::data, "cursor/c", "crc32c mismatch"));
    EXPECT_EQ(rep->data_records, 1u);
}

TEST_P(RocksdbStore, VerifyPassesACleanStoreAndNamesStructuralDamage) {
    {
        auto st = open_store();
        ASSERT_TRUE(st);
        auto sid = open_session_sync(*st, 30s);
        ASSERT_TRUE(sid);
        ASSERT_TRUE(create_sync(*st, "topic/a", "x").value().applied);
        ASSERT_TRUE(create_sync(*st, "owner/a", "broker", *sid).value().applied);
        // Destroyed with the session open: the ephemeral stays on disk until the next open,
        // exactly as after a crash.
    }
    auto clean = verify_rocksdb_store(path_);
    ASSERT_TRUE(clean.has_value()) << clean.error().message();
    EXPECT_TRUE(clean->ok()) << clean->problems.front().reason;
    EXPECT_EQ(clean->data_records, 2u);
    EXPECT_EQ(clean->ephemeral_records, 1u);
    EXPECT_EQ(clean->index_entries, 1u);
    EXPECT_EQ(clean->format, format::store_format_v1);
    EXPECT_GE(clean->revision, 2u);
    EXPECT_EQ(clean->next_session, 2u);

    {
        raw_db raw(path_);
        raw.del(raw.first_key_with_prefix(std::string(format::index_prefix)));
        raw.put("zzz", "stray");
        raw.put(std::string(format::revision_key), format::encode_u64(format::revision_key, 1));
    }
    auto rep = verify_rocksdb_store(path_);
    ASSERT_TRUE(rep.has_value());
    EXPECT_TRUE(has_problem(*rep, verify_area::data, "owner/a", "has no index entry"));
    EXPECT_TRUE(has_problem(*rep, verify_area::unknown, "zzz", "outside"));
    EXPECT_TRUE(has_problem(*rep, verify_area::meta, "m/revision", "versions could repeat"));
    EXPECT_EQ(rep->problems.size(), 3u);
}

TEST_P(RocksdbStore, OpenPurgesEphemeralKeysOfTheLastProcess) {
    version persistent = absent;
    {
        auto st = open_store();
        ASSERT_TRUE(st);
        auto sid = open_session_sync(*st, 30s);
        ASSERT_TRUE(sid);
        for (int i = 0; i < 10; ++i) {
            ASSERT_TRUE(create_sync(*st, fmt::format("eph/{}", i), "x", *sid).value().applied);
        }
        persistent = create_sync(*st, "eph-not", "y").value().current;
    }
    auto st = open_store();
    ASSERT_TRUE(st);
    auto left = list_sync(*st, "eph");
    ASSERT_TRUE(left);
    ASSERT_EQ(left->size(), 1u);
    EXPECT_EQ((*left)[0].key, "eph-not");
    EXPECT_EQ((*left)[0].rec.ver, persistent);
    st.reset();
    auto rep = verify_rocksdb_store(path_);
    ASSERT_TRUE(rep);
    EXPECT_TRUE(rep->ok());
    EXPECT_EQ(rep->index_entries, 0u);
}

TEST_P(RocksdbStore, OpenRefusesForeignAndNewerDirectories) {
    {
        raw_db raw(path_);
        raw.put("hello", "not a meta store");
    }
    auto foreign = rocksdb_store::open(path_);
    ASSERT_FALSE(foreign);
    EXPECT_EQ(foreign.error(), errc::incompatible_format);

    temp_dir other;
    const std::string newer = other.sub("newer");
    {
        raw_db raw(newer);
        raw.put(std::string(format::format_key), format::encode_u64(format::format_key, 2));
    }
    auto r = rocksdb_store::open(newer);
    ASSERT_FALSE(r);
    EXPECT_EQ(r.error(), errc::incompatible_format);
}

TEST_P(RocksdbStore, SecondOpenAndMissingDirectoryAreIoErrors) {
    auto first = open_store();
    ASSERT_TRUE(first);
    auto second = rocksdb_store::open(path_);
    ASSERT_FALSE(second);
    EXPECT_EQ(second.error(), errc::io_error);

    auto missing = rocksdb_store::open(dir_.sub("absent"), {.create_if_missing = false});
    ASSERT_FALSE(missing);
    EXPECT_EQ(missing.error(), errc::io_error);
    auto rep = verify_rocksdb_store(dir_.sub("absent"));
    ASSERT_FALSE(rep);
    EXPECT_EQ(rep.error(), errc::io_error);
}

INSTANTIATE_TEST_SUITE_P(meta,
                         RocksdbStore,
                         ::testing::Values(std::size_t{1}, std::size_t{256}),
                         [](const ::testing::TestParamInfo<std::size_t>& info) {
                             return fmt::format("group{}", info.param);
                         });

}  // namespace
}  // namespace nereus::meta::test
