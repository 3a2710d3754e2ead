// Behaviour of fs_object_store on a healthy file system, run on both POSIX and in-memory.

#include "nereus/objects/fs_object_store.h"

#include "nereus/base/crc32c.h"
#include "nereus/objects/errc.h"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include "unit/objects/support/store_fixture.h"
#include <algorithm>
#include <atomic>
#include <string>
#include <sys/mman.h>
#include <thread>
#include <vector>

namespace nereus::objects::testing {
namespace {

using names = std::vector<std::string>;

TEST_P(ObjectStore, RoundTrip) {
    const auto bytes = to_bytes("snapshot of cursor c1 at version 7");
    auto put = store_->put_if_absent("cursor/orders/c1/7", bytes);
    ASSERT_TRUE(put) << put.error().message();
    EXPECT_EQ(*put, put_outcome::created);

    auto got = store_->get("cursor/orders/c1/7");
    ASSERT_TRUE(got) << got.error().message();
    EXPECT_EQ(got->bytes, bytes);
    EXPECT_EQ(got->checksum, crc32c::value(bytes));
}

TEST_P(ObjectStore, RoundTripEmptyAndLargeObjects) {
    const std::vector<std::byte> empty;
    const auto large = pattern(3 << 20);
    ASSERT_EQ(store_->put_if_absent("empty", empty).value(), put_outcome::created);
    ASSERT_EQ(store_->put_if_absent("large", large).value(), put_outcome::created);

    auto e = store_->get("empty");
    ASSERT_TRUE(e);
    EXPECT_TRUE(e->bytes.empty());
    EXPECT_EQ(e->checksum, crc32c::value(empty));
    auto l = store_->get("large");
    ASSERT_TRUE(l);
    EXPECT_EQ(l->bytes, large);
}

TEST_P(ObjectStore, ObjectsSurviveReopen) {
    ASSERT_EQ(store_->put_if_absent("a/b", to_bytes("one")).value(), put_outcome::created);
    ASSERT_EQ(store_->put_if_absent("c", to_bytes("two")).value(), put_outcome::created);
    store_ = open_store();
    ASSERT_NE(store_, nullptr);
    EXPECT_EQ(to_string(store_->get("a/b").value().bytes), "one");
    EXPECT_EQ(to_string(store_->get("c").value().bytes), "two");
    EXPECT_EQ(store_->list("").value(), (names{"a/b", "c"}));
    EXPECT_EQ(store_->temp_files_removed_on_open(), 0U);
}

TEST_P(ObjectStore, PutIfAbsentSameContent) {
    ASSERT_EQ(store_->put_if_absent("x", to_bytes("payload")).value(), put_outcome::created);
    auto again = store_->put_if_absent("x", to_bytes("payload"));
    ASSERT_TRUE(again);
    EXPECT_EQ(*again, put_outcome::already_exists_same);
    EXPECT_EQ(to_string(store_->get("x").value().bytes), "payload");
}

TEST_P(ObjectStore, PutIfAbsentDifferentContentNeverChangesTheObject) {
    ASSERT_EQ(store_->put_if_absent("x", to_bytes("payload")).value(), put_outcome::created);
    for (const auto* other : {"PAYLOAD", "payloa", "payload!", ""}) {
        auto put = store_->put_if_absent("x", to_bytes(other));
        ASSERT_TRUE(put) << other;
        EXPECT_EQ(*put, put_outcome::already_exists_different) << other;
    }
    EXPECT_EQ(to_string(store_->get("x").value().bytes), "payload");
    // No temp file is left behind by the refused puts.
    EXPECT_TRUE(fs_->list_dir(temp_dir_path()).value().empty());
}

TEST_P(ObjectStore, GetMissingIsNotFound) {
    auto got = store_->get("missing");
    ASSERT_FALSE(got);
    EXPECT_EQ(got.error(), errc::not_found);
}

TEST_P(ObjectStore, ListIsSortedByNameAndFiltersByBytePrefix) {
    // '/' escapes to '+', which sorts differently on disk: the listing must still be sorted
    // by logical name, and '-' (0x2d) < '.' (0x2e) < '/' (0x2f) < '0' (0x30).
    const names all = {"a",  "a-b", "a.b",        "a/b",         "a/b/c",      "a0",
                       "ab", "b",   "cursor/x/1", "cursor/x/10", "cursor/x/2", "cursor/y/1"};
    auto shuffled = all;
    std::reverse(shuffled.begin(), shuffled.end());
    for (const auto& n : shuffled) {
        ASSERT_EQ(store_->put_if_absent(n, to_bytes(n)).value(), put_outcome::created) << n;
    }

    EXPECT_EQ(store_->list("").value(), all);
    EXPECT_EQ(store_->list("a").value(), (names{"a", "a-b", "a.b", "a/b", "a/b/c", "a0", "ab"}));
    EXPECT_EQ(store_->list("a/").value(), (names{"a/b", "a/b/c"}));
    EXPECT_EQ(store_->list("a/b").value(), (names{"a/b", "a/b/c"}));  // byte prefix
    EXPECT_EQ(store_->list("a/b/").value(), (names{"a/b/c"}));
    EXPECT_EQ(store_->list("a/b/c").value(), (names{"a/b/c"}));  // prefix == whole name
    EXPECT_EQ(store_->list("a/b/c/").value(), names{});
    EXPECT_EQ(store_->list("cursor/x/").value(),
              (names{"cursor/x/1", "cursor/x/10", "cursor/x/2"}));
    EXPECT_EQ(store_->list("cursor/x/1").value(), (names{"cursor/x/1", "cursor/x/10"}));
    EXPECT_EQ(store_->list("cursor/").value().size(), 4U);
    EXPECT_EQ(store_->list("b").value(), (names{"b"}));
    EXPECT_EQ(store_->list("bb").value(), names{});
    EXPECT_EQ(store_->list("0").value(), names{});  // before every name
    EXPECT_EQ(store_->list("z").value(), names{});  // after every name
    // The escape byte is not part of the name alphabet and never matches a separator.
    EXPECT_EQ(store_->list("a+").value(), names{});
    EXPECT_EQ(store_->list("a+b").value(), names{});
}

TEST_P(ObjectStore, ListOfEmptyStore) {
    EXPECT_EQ(store_->list("").value(), names{});
}

TEST_P(ObjectStore, RemoveMakesTheNameAbsentAndReusable) {
    ASSERT_EQ(store_->put_if_absent("gc/old", to_bytes("v1")).value(), put_outcome::created);
    ASSERT_EQ(store_->put_if_absent("gc/keep", to_bytes("k")).value(), put_outcome::created);
    ASSERT_TRUE(store_->remove("gc/old"));

    EXPECT_EQ(error_of(store_->get("gc/old")), errc::not_found);
    EXPECT_EQ(store_->list("gc/").value(), (names{"gc/keep"}));
    EXPECT_EQ(error_of(store_->remove("gc/old")), errc::not_found);
    EXPECT_EQ(error_of(store_->remove("never")), errc::not_found);

    // Removal ends the name's life; a later put starts a new one.
    EXPECT_EQ(store_->put_if_absent("gc/old", to_bytes("v2")).value(), put_outcome::created);
    EXPECT_EQ(to_string(store_->get("gc/old").value().bytes), "v2");
    EXPECT_EQ(to_string(store_->get("gc/keep").value().bytes), "k");
}

TEST_P(ObjectStore, InvalidNamesAreRejectedByEveryOperation) {
    const std::vector<std::string> invalid = {
        "",       "/a",   "a/",
        "a//b",   "/",    "..",
        "a/../b", "../a", ".",
        "./a",    "a/.",  "a b",
        "a+b",    "a\\b", "a:b",
        "a*",     "ä",    std::string("a\0b", 3),
        "a\nb",   "~x",   std::string(max_object_name_length + 1, 'n')};
    for (const auto& n : invalid) {
        EXPECT_EQ(error_of(store_->put_if_absent(n, to_bytes("x"))), errc::invalid_name) << n;
        EXPECT_EQ(error_of(store_->get(n)), errc::invalid_name) << n;
        EXPECT_EQ(error_of(store_->remove(n)), errc::invalid_name) << n;
    }
    EXPECT_EQ(store_->list("").value(), names{});
    EXPECT_TRUE(fs_->list_dir(temp_dir_path()).value().empty());
}

TEST_P(ObjectStore, BoundaryValidNames) {
    const std::vector<std::string> valid = {"a",
                                            "-",
                                            "_",
                                            ".hidden",
                                            "a..b",
                                            "a.",
                                            "...",
                                            "A-Z_a-z.0-9",
                                            "a/b/c/d/e/f",
                                            std::string(max_object_name_length, 'n'),
                                            std::string(max_object_name_length - 2, 'n') + "/n"};
    for (const auto& n : valid) {
        ASSERT_EQ(store_->put_if_absent(n, to_bytes(n)).value(), put_outcome::created) << n;
        EXPECT_EQ(to_string(store_->get(n).value().bytes), n);
    }
    auto listed = store_->list("").value();
    auto sorted = valid;
    std::sort(sorted.begin(), sorted.end());
    EXPECT_EQ(listed, sorted);
}

TEST_P(ObjectStore, OversizedPayloadIsRejectedBeforeAnyWrite) {
    // Reserved, never touched address space, so the oversized span costs no memory.
    const std::size_t size = static_cast<std::size_t>(max_object_size) + 1;
    void* region =
        ::mmap(nullptr, size, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    ASSERT_NE(region, MAP_FAILED);
    const bytes_view huge(static_cast<const std::byte*>(region), size);
    EXPECT_EQ(error_of(store_->put_if_absent("huge", huge)), errc::object_too_large);
    EXPECT_EQ(error_of(store_->get("huge")), errc::not_found);
    ::munmap(region, size);
}

TEST_P(ObjectStore, LeftoverTempFilesAreDeletedOnOpen) {
    ASSERT_EQ(store_->put_if_absent("kept", to_bytes("k")).value(), put_outcome::created);
    store_.reset();
    // Debris of puts that died before their rename: complete-looking, torn and empty files.
    write_file(path_join(temp_dir_path(), "0123456789abcdef-00000001.tmp"), pattern(100));
    write_file(path_join(temp_dir_path(), "0123456789abcdef-00000002.tmp"), {});
    write_file(path_join(temp_dir_path(), "foreign-file"), to_bytes("x"));

    store_ = open_store();
    ASSERT_NE(store_, nullptr);
    EXPECT_EQ(store_->temp_files_removed_on_open(), 3U);
    EXPECT_TRUE(fs_->list_dir(temp_dir_path()).value().empty());
    EXPECT_EQ(store_->list("").value(), (names{"kept"}));
    EXPECT_EQ(to_string(store_->get("kept").value().bytes), "k");
}

TEST_P(ObjectStore, OpenCreatesTheLayout) {
    EXPECT_TRUE(fs_->is_dir(objects_dir()).value());
    EXPECT_TRUE(fs_->is_dir(temp_dir_path()).value());
    EXPECT_FALSE(fs_object_store::open(fs_, ""));
    EXPECT_FALSE(fs_object_store::open(nullptr, dir_));
}

TEST_P(ObjectStore, ObjectFileNameEscapesSeparators) {
    ASSERT_EQ(store_->put_if_absent("cursor/t/c", to_bytes("x")).value(), put_outcome::created);
    EXPECT_EQ(fs_->list_dir(objects_dir()).value(), (names{"cursor+t+c"}));
}

TEST_P(ObjectStore, ConcurrentPutsOfOneNameCreateExactlyOnce) {
    constexpr int threads = 8;
    for (const bool same : {true, false}) {
        const std::string name = same ? "race/same" : "race/different";
        std::atomic<int> created{0};
        std::atomic<int> existing_same{0};
        std::atomic<int> existing_different{0};
        std::atomic<int> failed{0};
        std::vector<std::vector<std::byte>> contents;
        contents.reserve(threads);
        for (int t = 0; t < threads; ++t) {
            contents.push_back(pattern(4096, same ? 0 : static_cast<unsigned>(t)));
        }
        std::vector<int> winner(threads, 0);
        std::vector<std::thread> workers;
        workers.reserve(threads);
        for (int t = 0; t < threads; ++t) {
            workers.emplace_back([&, t] {
                auto r = store_->put_if_absent(name, contents[static_cast<std::size_t>(t)]);
                if (!r) {
                    ++failed;
                } else if (*r == put_outcome::created) {
                    ++created;
                    winner[static_cast<std::size_t>(t)] = 1;
                } else if (*r == put_outcome::already_exists_same) {
                    ++existing_same;
                } else {
                    ++existing_different;
                }
            });
        }
        for (auto& w : workers) {
            w.join();
        }
        EXPECT_EQ(failed.load(), 0);
        ASSERT_EQ(created.load(), 1) << name;
        if (same) {
            EXPECT_EQ(existing_same.load(), threads - 1);
        } else {
            EXPECT_EQ(existing_different.load(), threads - 1);
        }
        const auto w =
            static_cast<std::size_t>(std::find(winner.begin(), winner.end(), 1) - winner.begin());
        EXPECT_EQ(store_->get(name).value().bytes, contents[w]) << name;
    }
    EXPECT_TRUE(fs_->list_dir(temp_dir_path()).value().empty());
}

TEST_P(ObjectStore, ConcurrentPutsOfDistinctNames) {
    constexpr int threads = 8;
    constexpr int per_thread = 16;
    std::atomic<int> failures{0};
    std::vector<std::thread> workers;
    workers.reserve(threads);
    for (int t = 0; t < threads; ++t) {
        workers.emplace_back([&, t] {
            for (int i = 0; i < per_thread; ++i) {
                const auto name = fmt::format("t{}/{}", t, i);
                auto r = store_->put_if_absent(name, to_bytes(name));
                if (!r || *r != put_outcome::created) {
                    ++failures;
                }
            }
        });
    }
    for (auto& w : workers) {
        w.join();
    }
    EXPECT_EQ(failures.load(), 0);
    const auto listed = store_->list("").value();
    ASSERT_EQ(listed.size(), static_cast<std::size_t>(threads * per_thread));
    for (const auto& n : listed) {
        EXPECT_EQ(to_string(store_->get(n).value().bytes), n);
    }
}

INSTANTIATE_TEST_SUITE_P(backends,
                         ObjectStore,
                         ::testing::Values(backend::posix, backend::memory),
                         backend_name);

}  // namespace
}  // namespace nereus::objects::testing
