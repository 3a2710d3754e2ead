#include "nereus/broker/partitioned_topics.h"

#include "nereus/proto/server_error.h"

#include <charconv>

namespace nereus::broker {

namespace {

constexpr std::string_view key_root = "partitioned/";

bool kept(char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-';
}

int hex_value(char c) {
    if (c >= '0' && c <= '9') {
        return c - '0';
    }
    if (c >= 'a' && c <= 'f') {
        return c - 'a' + 10;
    }
    return -1;
}

std::string namespace_prefix(std::string_view tenant, std::string_view ns) {
    std::string k(key_root);
    k += escape_key_component(tenant);
    k += '/';
    k += escape_key_component(ns);
    k += '/';
    return k;
}

std::optional<std::uint32_t> parse_count(std::string_view v) {
    std::uint32_t n = 0;
    const auto* end = v.data() + v.size();
    auto [p, ec] = std::from_chars(v.data(), end, n);
    if (ec != std::errc() || p != end) {
        return std::nullopt;
    }
    return n;
}

}  // namespace

std::string escape_key_component(std::string_view raw) {
    static constexpr char digits[] = "0123456789abcdef";
    std::string out;
    out.reserve(raw.size());
    for (char c : raw) {
        if (kept(c)) {
            out += c;
        } else {
            const auto b = static_cast<unsigned char>(c);
            out += '_';
            out += digits[b >> 4];
            out += digits[b & 15];
        }
    }
    return out;
}

std::optional<std::string> unescape_key_component(std::string_view s) {
    std::string out;
    for (std::size_t i = 0; i < s.size(); ++i) {
        if (s[i] != '_') {
            if (!kept(s[i])) {
                return std::nullopt;
            }
            out += s[i];
            continue;
        }
        if (i + 2 >= s.size()) {
            return std::nullopt;
        }
        const int hi = hex_value(s[i + 1]);
        const int lo = hex_value(s[i + 2]);
        if (hi < 0 || lo < 0) {
            return std::nullopt;
        }
        out += static_cast<char>(hi * 16 + lo);
        i += 2;
    }
    return out;
}

std::string partitioned_key(const topic_name& n) {
    return namespace_prefix(n.tenant, n.ns) + escape_key_component(n.local);
}

result<std::uint32_t> partition_count(const topic_backend& b, const topic_name& n) {
    auto r = b.get_admin_record(partitioned_key(n));
    if (!r) {
        return nereus::error(r.error());
    }
    if (!*r) {
        return 0U;
    }
    auto c = parse_count(**r);
    if (!c) {
        return nereus::error(proto::error_kind::metadata_failure);
    }
    return *c;
}

result<bool> create_partitioned_metadata(topic_backend& b,
                                         const topic_name& n,
                                         std::uint32_t partitions) {
    if (partitions == 0 || partitions > max_partitions) {
        return nereus::error(proto::error_kind::bad_request);
    }
    return b.create_admin_record(partitioned_key(n), std::to_string(partitions));
}

result<bool> update_partitioned_metadata(topic_backend& b,
                                         const topic_name& n,
                                         std::uint32_t from,
                                         std::uint32_t to) {
    if (from == 0 || to <= from || to > max_partitions) {
        return nereus::error(proto::error_kind::bad_request);
    }
    return b.replace_admin_record(partitioned_key(n), std::to_string(from), std::to_string(to));
}

result<bool> remove_partitioned_metadata(topic_backend& b, const topic_name& n) {
    return b.remove_admin_record(partitioned_key(n));
}

result<std::vector<partitioned_topic>> list_partitioned_topics(const topic_backend& b,
                                                               std::string_view tenant,
                                                               std::string_view ns) {
    const std::string prefix = namespace_prefix(tenant, ns);
    auto recs = b.list_admin_records(prefix);
    if (!recs) {
        return nereus::error(recs.error());
    }
    std::vector<partitioned_topic> out;
    for (const auto& [k, v] : *recs) {
        auto local = unescape_key_component(std::string_view(k).substr(prefix.size()));
        auto c = parse_count(v);
        if (!local || !c) {
            continue;  // not ours (a foreign key under the prefix): skipped, not fatal
        }
        out.push_back(
            {"persistent://" + std::string(tenant) + "/" + std::string(ns) + "/" + *local, *c});
    }
    return out;
}

}  // namespace nereus::broker
