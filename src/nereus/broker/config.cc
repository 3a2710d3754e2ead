#include "nereus/broker/config.h"

#include <fmt/format.h>

#include <charconv>
#include <cstdint>
#include <fstream>
#include <functional>
#include <map>
#include <sstream>

namespace nereus::broker {

std::string config_error::to_string() const {
    if (line == 0) {
        return fmt::format("{}: {}", path, message);
    }
    return fmt::format("{}:{}: {}", path, line, message);
}

namespace {

std::string_view trim(std::string_view s) {
    const auto is_space = [](char c) {
        return c == ' ' || c == '\t' || c == '\r';
    };
    while (!s.empty() && is_space(s.front())) {
        s.remove_prefix(1);
    }
    while (!s.empty() && is_space(s.back())) {
        s.remove_suffix(1);
    }
    return s;
}

// A value parser: returns an empty string on success, else what is wrong with the value.
using setter = std::function<std::string(std::string_view, standalone_options&)>;

template <class T>
setter unsigned_in(T standalone_options::*field, std::uint64_t lo, std::uint64_t hi) {
    return [=](std::string_view v, standalone_options& o) -> std::string {
        std::uint64_t n = 0;
        auto [end, ec] = std::from_chars(v.data(), v.data() + v.size(), n);
        if (ec != std::errc{} || end != v.data() + v.size()) {
            return fmt::format("'{}' is not a non-negative integer", v);
        }
        if (n < lo || n > hi) {
            return fmt::format("{} is outside {}..{}", n, lo, hi);
        }
        o.*field = static_cast<T>(n);
        return {};
    };
}

template <class T>
setter signed_in(T standalone_options::*field, std::int64_t lo, std::int64_t hi) {
    return [=](std::string_view v, standalone_options& o) -> std::string {
        std::int64_t n = 0;
        auto [end, ec] = std::from_chars(v.data(), v.data() + v.size(), n);
        if (ec != std::errc{} || end != v.data() + v.size()) {
            return fmt::format("'{}' is not an integer", v);
        }
        if (n < lo || n > hi) {
            return fmt::format("{} is outside {}..{}", n, lo, hi);
        }
        o.*field = static_cast<T>(n);
        return {};
    };
}

setter text(std::string standalone_options::*field, bool allow_empty) {
    return [=](std::string_view v, standalone_options& o) -> std::string {
        if (v.empty() && !allow_empty) {
            return "the value is empty";
        }
        o.*field = std::string(v);
        return {};
    };
}

setter boolean(bool standalone_options::*field) {
    return [=](std::string_view v, standalone_options& o) -> std::string {
        if (v == "true") {
            o.*field = true;
        } else if (v == "false") {
            o.*field = false;
        } else {
            return fmt::format("'{}' is neither true nor false", v);
        }
        return {};
    };
}

const std::map<std::string, setter, std::less<>>& keys() {
    static const std::map<std::string, setter, std::less<>> k = {
        {"dataDir", text(&standalone_options::data_dir, false)},
        {"metadataStoreUrl",
         [](std::string_view v, standalone_options& o) -> std::string {
             // Pulsar writes zk:host:port/root; Nereus's own form is zk://host:port/root.
             if (v.starts_with("zk:") && !v.starts_with("zk://")) {
                 o.metadata_url = "zk://" + std::string(v.substr(3));
                 return {};
             }
             if (!v.starts_with("zk://") || v.size() <= 5) {
                 return fmt::format(
                     "'{}' is not a zk://host:port/root url (only ZooKeeper is "
                     "supported besides the embedded default)",
                     v);
             }
             o.metadata_url = std::string(v);
             return {};
         }},
        {"bindAddress", text(&standalone_options::bind_address, false)},
        {"brokerServicePort", unsigned_in(&standalone_options::port, 0, 65535)},
        {"webServicePort", unsigned_in(&standalone_options::http_port, 0, 65535)},
        {"advertisedAddress", text(&standalone_options::advertised_address, true)},
        {"numIOThreads", unsigned_in(&standalone_options::io_threads, 1, 64)},
        {"numBlockingThreads", unsigned_in(&standalone_options::blocking_threads, 1, 64)},
        {"maxMessageSize",
         unsigned_in(&standalone_options::max_message_size, 1024, 100 * 1024 * 1024)},
        {"allowAutoTopicCreation", boolean(&standalone_options::auto_create_topics)},
        {"allowAutoTopicCreationType",
         [](std::string_view v, standalone_options&) -> std::string {
             if (v == "non-partitioned") {
                 return {};
             }
             return fmt::format("'{}' is not supported (only non-partitioned)", v);
         }},
        {"maxUnackedMessagesPerConsumer",
         unsigned_in(&standalone_options::max_unacked_per_consumer, 1, 10'000'000)},
        {"keepAliveIntervalSeconds",
         unsigned_in(&standalone_options::keepalive_interval_s, 1, 3600)},
        {"brokerShutdownTimeoutMs", unsigned_in(&standalone_options::stop_timeout_ms, 0, 600'000)},
        {"dispatcherMaxReadBatchSize", unsigned_in(&standalone_options::dispatch_batch, 1, 10'000)},
        {"dispatcherInlineReads", boolean(&standalone_options::inline_reads)},
        {"journalLeaderCommits", boolean(&standalone_options::leader_commits)},
        {"journalPipelinedApply", boolean(&standalone_options::pipelined_apply)},
        {"journalMinSyncIntervalMicros",
         unsigned_in(&standalone_options::min_sync_interval_us, 0, 100'000)},
        {"journalPreparedFiles", boolean(&standalone_options::prepared_journal_files)},
        {"journalPrepareMaxMBPerSecond",
         unsigned_in(&standalone_options::prepare_max_mib_s, 0, 1'000'000)},
        {"statsUpdateFrequencyInSecs", unsigned_in(&standalone_options::stats_interval_s, 1, 3600)},
        {"defaultRetentionTimeInMinutes",
         signed_in(&standalone_options::retention_time_minutes, -1, 1'000'000'000)},
        {"defaultRetentionSizeInMB",
         signed_in(&standalone_options::retention_size_mb, -1, 1'000'000'000)},
        {"retentionCheckIntervalInSeconds",
         unsigned_in(&standalone_options::retention_check_interval_s, 1, 86'400)},
        {"managedLedgerMaxEntriesPerLedger",
         unsigned_in(&standalone_options::max_entries_per_ledger, 1, 1'000'000'000)},
        {"managedLedgerMinLedgerRolloverTimeMinutes",
         unsigned_in(&standalone_options::min_ledger_rollover_minutes, 0, 1'000'000)},
    };
    return k;
}

}  // namespace

tl::expected<void, config_error> parse_standalone_config(std::string_view text,
                                                         const std::string& path,
                                                         standalone_options& options) {
    standalone_options parsed = options;  // applied only when the whole file is valid
    int line_no = 0;
    while (!text.empty()) {
        const auto eol = text.find('\n');
        std::string_view line = text.substr(0, eol);
        text = eol == std::string_view::npos ? std::string_view{} : text.substr(eol + 1);
        ++line_no;
        line = trim(line);
        if (line.empty() || line.front() == '#') {
            continue;
        }
        const auto eq = line.find('=');
        if (eq == std::string_view::npos) {
            return tl::unexpected(config_error{path, line_no, "expected key=value"});
        }
        const auto key = trim(line.substr(0, eq));
        const auto value = trim(line.substr(eq + 1));
        const auto it = keys().find(key);
        if (it == keys().end()) {
            std::string known;
            for (const auto& [k, _] : keys()) {
                known += (known.empty() ? "" : ", ") + k;
            }
            return tl::unexpected(config_error{
                path, line_no, fmt::format("unknown key '{}' (supported: {})", key, known)});
        }
        if (auto why = it->second(value, parsed); !why.empty()) {
            return tl::unexpected(config_error{path, line_no, fmt::format("{}: {}", key, why)});
        }
    }
    options = std::move(parsed);
    return {};
}

tl::expected<void, config_error> load_standalone_config(const std::string& path,
                                                        standalone_options& options) {
    std::ifstream in(path, std::ios::binary);
    if (!in) {
        return tl::unexpected(config_error{path, 0, "cannot be read"});
    }
    std::ostringstream content;
    content << in.rdbuf();
    if (in.bad()) {
        return tl::unexpected(config_error{path, 0, "read error"});
    }
    return parse_standalone_config(content.str(), path, options);
}

}  // namespace nereus::broker
