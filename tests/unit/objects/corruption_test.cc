// Damaged object files: get() fails with a typed error, verify() names the object and the
// reason, and nothing damaged is ever returned as valid. Run on POSIX and in-memory.

#include "nereus/base/crc32c.h"
#include "nereus/objects/errc.h"
#include "nereus/objects/object_file.h"
#include "nereus/objects/object_format.h"
#include "nereus/objects/verify.h"

#include <gtest/gtest.h>

#include "unit/objects/support/store_fixture.h"
#include <cstring>
#include <string>
#include <vector>

namespace nereus::objects::testing {
namespace {

class ObjectStoreCorruption : public ObjectStore {
protected:
    void SetUp() override {
        ObjectStore::SetUp();
        ASSERT_EQ(store_->put_if_absent("victim/1", payload_).value(), put_outcome::created);
        ASSERT_EQ(store_->put_if_absent("healthy", to_bytes("fine")).value(), put_outcome::created);
        file_ = read_file(object_path("victim/1"));
        ASSERT_EQ(file_.size(), object_header_size + std::strlen("victim/1") + payload_.size());
    }

    // Replaces the victim's file by `bytes`.
    void damage(const std::vector<std::byte>& bytes) { write_file(object_path("victim/1"), bytes); }

    // Asserts get() refuses the victim with `code` and verify() reports exactly the victim with
    // `reason`; the healthy object stays readable.
    void expect_corrupt(corruption_reason reason, std::error_code code = errc::corrupt_object) {
        auto got = store_->get("victim/1");
        ASSERT_FALSE(got) << "damaged object returned as valid";
        EXPECT_EQ(got.error(), code);
        EXPECT_EQ(to_string(store_->get("healthy").value().bytes), "fine");

        auto report = verify(*fs_, dir_);
        ASSERT_TRUE(report) << report.error().message();
        EXPECT_FALSE(report->ok());
        ASSERT_EQ(report->corrupt.size(), 1U);
        EXPECT_EQ(report->corrupt[0].name, "victim/1");
        EXPECT_EQ(report->corrupt[0].file_name, "victim+1");
        EXPECT_EQ(report->corrupt[0].reason, reason)
            << to_string(report->corrupt[0].reason) << ": " << report->corrupt[0].detail;
        EXPECT_FALSE(report->corrupt[0].detail.empty());
        EXPECT_EQ(report->valid_objects, 1U);
        EXPECT_EQ(report->entries_checked, 2U);

        // A put of the same name cannot compare with a damaged object and says so.
        EXPECT_EQ(error_of(store_->put_if_absent("victim/1", payload_)), code);
        // The name is still listed, and a damaged object can be removed.
        EXPECT_EQ(store_->list("victim/").value(), std::vector<std::string>{"victim/1"});
        EXPECT_TRUE(store_->remove("victim/1"));
        EXPECT_EQ(error_of(store_->get("victim/1")), errc::not_found);
        EXPECT_TRUE(verify(*fs_, dir_).value().ok());
    }

    const std::vector<std::byte> payload_ = pattern(1000);
    std::vector<std::byte> file_;
};

TEST_P(ObjectStoreCorruption, CleanStoreVerifies) {
    auto report = verify(*fs_, dir_);
    ASSERT_TRUE(report);
    EXPECT_TRUE(report->ok());
    EXPECT_EQ(report->entries_checked, 2U);
    EXPECT_EQ(report->valid_objects, 2U);
    EXPECT_EQ(report->valid_payload_bytes, payload_.size() + 4);
    EXPECT_TRUE(report->leftover_temp_files.empty());
}

TEST_P(ObjectStoreCorruption, EveryFlippedPayloadByteIsDetected) {
    const std::size_t first = file_.size() - payload_.size();
    for (std::size_t i = first; i < file_.size(); i += 37) {
        auto bad = file_;
        bad[i] ^= std::byte{0x01};
        damage(bad);
        auto got = store_->get("victim/1");
        ASSERT_FALSE(got) << "flip at " << i;
        EXPECT_EQ(got.error(), errc::corrupt_object);
    }
    auto bad = file_;
    bad.back() ^= std::byte{0x80};
    damage(bad);
    expect_corrupt(corruption_reason::payload_checksum_mismatch);
}

TEST_P(ObjectStoreCorruption, EveryFlippedHeaderOrNameByteIsDetected) {
    const std::size_t header_and_name = file_.size() - payload_.size();
    for (std::size_t i = 0; i < header_and_name; ++i) {
        auto bad = file_;
        bad[i] ^= std::byte{0x10};
        damage(bad);
        auto got = store_->get("victim/1");
        ASSERT_FALSE(got) << "flip at " << i;
        EXPECT_EQ(got.error(), errc::corrupt_object) << "flip at " << i;
    }
    auto bad = file_;
    bad[8] ^= std::byte{0x01};  // payload_length
    damage(bad);
    expect_corrupt(corruption_reason::header_checksum_mismatch);
}

TEST_P(ObjectStoreCorruption, WrongMagic) {
    auto bad = file_;
    bad[0] = std::byte{'X'};
    damage(bad);
    expect_corrupt(corruption_reason::bad_magic);
}

TEST_P(ObjectStoreCorruption, TruncatedInsideThePayload) {
    auto bad = file_;
    bad.resize(bad.size() - 1);
    damage(bad);
    expect_corrupt(corruption_reason::truncated);
}

TEST_P(ObjectStoreCorruption, TruncatedInsideTheHeader) {
    auto bad = file_;
    bad.resize(10);
    damage(bad);
    expect_corrupt(corruption_reason::truncated);
}

TEST_P(ObjectStoreCorruption, TruncatedInsideTheName) {
    auto bad = file_;
    bad.resize(object_header_size + 3);
    damage(bad);
    expect_corrupt(corruption_reason::truncated);
}

TEST_P(ObjectStoreCorruption, EmptyFile) {
    damage({});
    expect_corrupt(corruption_reason::truncated);
}

TEST_P(ObjectStoreCorruption, EveryTruncationIsDetected) {
    for (std::size_t size = 0; size < file_.size(); ++size) {
        damage(std::vector<std::byte>(file_.begin(), file_.begin() + static_cast<long>(size)));
        auto got = store_->get("victim/1");
        ASSERT_FALSE(got) << "truncated to " << size;
        EXPECT_EQ(got.error(), errc::corrupt_object);
    }
}

TEST_P(ObjectStoreCorruption, TrailingBytes) {
    auto bad = file_;
    bad.push_back(std::byte{0});
    damage(bad);
    expect_corrupt(corruption_reason::trailing_bytes);
}

TEST_P(ObjectStoreCorruption, ZeroFilledFile) {
    damage(std::vector<std::byte>(file_.size(), std::byte{0}));
    expect_corrupt(corruption_reason::bad_magic);
}

TEST_P(ObjectStoreCorruption, ObjectUnderTheWrongName) {
    // A valid file of another object copied over this one's name.
    damage(read_file(object_path("healthy")));
    expect_corrupt(corruption_reason::name_mismatch);
}

TEST_P(ObjectStoreCorruption, NewerFormatVersionIsUnsupportedNotSilentlyRead) {
    auto bad = file_;
    bad[4] = std::byte{2};  // format_version 2, with a recomputed (valid) header checksum
    const auto crc = object_header_crc(
        std::span<const std::byte, object_header_size>(bad.data(), object_header_size),
        std::span<const std::byte>(bad.data() + object_header_size, std::strlen("victim/1")));
    for (int i = 0; i < 4; ++i) {
        bad[object_header_crc_offset + static_cast<std::size_t>(i)] =
            static_cast<std::byte>((crc >> (8 * i)) & 0xff);
    }
    damage(bad);
    expect_corrupt(corruption_reason::unsupported_version, errc::unsupported_version);
}

TEST_P(ObjectStoreCorruption, StrayEntriesAreReportedAndNotListed) {
    write_file(path_join(objects_dir(), "not a name"), to_bytes("junk"));
    ASSERT_TRUE(fs_->create_dir(path_join(objects_dir(), "subdir")));
    write_file(path_join(temp_dir_path(), "abc.tmp"), to_bytes("half"));

    // A file whose name is no object name is invisible; a directory with an object-like name
    // is listed (list() does not stat entries) but get() refuses it.
    EXPECT_EQ(store_->list("").value(),
              (std::vector<std::string>{"healthy", "subdir", "victim/1"}));
    EXPECT_EQ(error_of(store_->get("subdir")), errc::corrupt_object);
    auto report = verify(*fs_, dir_);
    ASSERT_TRUE(report);
    ASSERT_EQ(report->corrupt.size(), 2U);
    EXPECT_EQ(report->corrupt[0].file_name, "not a name");
    EXPECT_EQ(report->corrupt[0].reason, corruption_reason::invalid_file_name);
    EXPECT_EQ(report->corrupt[1].file_name, "subdir");
    EXPECT_EQ(report->corrupt[1].reason, corruption_reason::not_a_file);
    EXPECT_EQ(report->valid_objects, 2U);
    EXPECT_EQ(report->leftover_temp_files, std::vector<std::string>{"abc.tmp"});
    // verify() is read-only.
    EXPECT_TRUE(fs_->exists(path_join(temp_dir_path(), "abc.tmp")).value());
    ASSERT_TRUE(fs_->remove_dir(path_join(objects_dir(), "subdir")));
}

TEST_P(ObjectStoreCorruption, VerifyOfAMissingStoreIsAnError) {
    EXPECT_FALSE(verify(*fs_, path_join(root_->path(), "nothing-here")));
}

TEST_P(ObjectStoreCorruption, ErrorMessagesAreReadable) {
    EXPECT_EQ(make_error_code(errc::corrupt_object).message(), "object is corrupt");
    EXPECT_STREQ(make_error_code(errc::not_found).category().name(), "nereus.objects");
    EXPECT_STREQ(to_string(corruption_reason::payload_checksum_mismatch),
                 "payload_checksum_mismatch");
    EXPECT_STREQ(to_string(put_outcome::already_exists_different), "already_exists_different");
}

INSTANTIATE_TEST_SUITE_P(backends,
                         ObjectStoreCorruption,
                         ::testing::Values(backend::posix, backend::memory),
                         backend_name);

}  // namespace
}  // namespace nereus::objects::testing
