// Kills a real process (SIGKILL) in the middle of an append load, again and again on the same
// directory, and checks after each kill that every append the child reported durable is present
// with its content. The child is storage_crash_child.

#include "nereus/base/crc32c.h"
#include "nereus/base/file_system.h"
#include "nereus/storage/stream_store.h"

#include <gtest/gtest.h>

#include "support/child_process.h"
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <map>
#include <random>
#include <sstream>
#include <string>
#include <string_view>
#include <unistd.h>
#include <vector>

namespace nereus::storage {
namespace {

#ifndef STORAGE_CRASH_CHILD
#error "STORAGE_CRASH_CHILD must name the child executable"
#endif

struct reported {
    std::uint64_t stream;
    std::uint64_t offset;
    std::uint32_t crc;
};

// Parses complete lines out of `buf`, leaving a partial last line in it.
void parse_lines(std::string& buf, std::vector<reported>& out) {
    std::size_t start = 0;
    for (std::size_t nl; (nl = buf.find('\n', start)) != std::string::npos; start = nl + 1) {
        std::istringstream line(buf.substr(start, nl - start));
        reported r{};
        line >> r.stream >> r.offset >> std::hex >> r.crc;
        if (line) {
            out.push_back(r);
        }
    }
    buf.erase(0, start);
}

TEST(StorageCrash, AcknowledgedAppendsSurviveSigkill) {
    const auto root =
        std::filesystem::temp_directory_path() / ("nereus-crash-" + std::to_string(::getpid()));
    std::filesystem::remove_all(root);
    std::filesystem::create_directories(root);
    struct cleanup {
        std::filesystem::path p;
        ~cleanup() {
            std::error_code ec;
            std::filesystem::remove_all(p, ec);
        }
    } const guard{root};  // also when an assertion ends the test early
    const std::string dir = (root / "store").string();
    std::mt19937_64 rng(std::random_device{}());
    std::map<std::pair<std::uint64_t, std::uint64_t>, std::uint32_t> durable;
    const auto test_start = std::chrono::steady_clock::now();

    for (int kill_no = 0; kill_no < 8; ++kill_no) {
        if (std::chrono::steady_clock::now() - test_start > std::chrono::seconds(20)) {
            break;  // bounded in time even on a slow disk
        }
        auto child = test::child_process::spawn({STORAGE_CRASH_CHILD, dir});
        ASSERT_TRUE(child.has_value());
        const auto run_for = std::chrono::milliseconds(100 + rng() % 500);
        std::string buf;
        std::vector<reported> lines;
        const auto sink = [&](std::string_view chunk) {
            buf.append(chunk);
            parse_lines(buf, lines);
        };
        // Lines written before the kill (still in the pipe) were acknowledged too.
        child->read_until(std::chrono::steady_clock::now() + run_for, sink);
        const int status = child->kill_and_drain(sink);
        EXPECT_TRUE(test::killed_by_sigkill(status))
            << "child exited on its own with status " << status;
        for (const auto& r : lines) {
            durable[{r.stream, r.offset}] = r.crc;
        }

        corruption_info info;
        auto s = stream_store::open(posix_file_system(), dir, {}, &info);
        ASSERT_TRUE(s) << "kill " << kill_no << ": " << s.error().message() << " "
                       << info.to_string();
        std::size_t checked = 0;
        for (const auto& [key, crc] : durable) {
            auto b = (*s)->read(stream_id(key.first), offset(key.second), 1, 1);
            ASSERT_TRUE(b) << b.error().message();
            ASSERT_EQ(b->size(), 1U)
                << "kill " << kill_no << ": lost stream " << key.first << " offset " << key.second;
            EXPECT_EQ(crc32c::value((*b)[0].payload), crc)
                << "stream " << key.first << " offset " << key.second;
            ++checked;
        }
        ASSERT_TRUE((*s)->close());
        std::fprintf(stderr, "kill %d after %lld ms: %zu new acknowledged appends, %zu checked\n",
                     kill_no, static_cast<long long>(run_for.count()), lines.size(), checked);
    }
    EXPECT_FALSE(durable.empty());
}

}  // namespace
}  // namespace nereus::storage
