#include "nereus/events/state_record.h"

#include "nereus/events/delivery.h"
#include "nereus/events/errc.h"

#include <charconv>
#include <string_view>

namespace nereus::events::detail {
namespace {

constexpr std::size_t max_ack_ids = 256;

std::vector<std::string_view> split(std::string_view s, char sep) {
    std::vector<std::string_view> out;
    while (true) {
        auto i = s.find(sep);
        out.push_back(s.substr(0, i));
        if (i == std::string_view::npos) {
            return out;
        }
        s.remove_prefix(i + 1);
    }
}

template <class T>
bool parse(std::string_view s, T& out) {
    auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), out);
    return ec == std::errc() && p == s.data() + s.size();
}

std::string pk(std::string_view prefix, std::uint32_t p) {
    std::string k(prefix);
    k += std::to_string(p);
    return k;
}

std::string pk2(std::string_view prefix, std::uint32_t p, std::int64_t from) {
    std::string k(prefix);
    k += std::to_string(p);
    k += '.';
    k += std::to_string(from);
    return k;
}

std::string pair_text(const std::pair<std::uint32_t, std::uint64_t>& v) {
    return std::to_string(v.first) + "," + std::to_string(v.second);
}

bool parse_pair(std::string_view s, std::pair<std::uint32_t, std::uint64_t>& out) {
    auto f = split(s, ',');
    return f.size() == 2 && parse(f[0], out.first) && parse(f[1], out.second);
}

}  // namespace

void state_record::set_partitions(std::uint32_t n) {
    partitions = n;
    ledger.resize(n, -1);
    barrier.resize(n, -1);
    committed.resize(n);
    next.resize(n, 0);
}

std::int64_t state_record::held_entry(std::uint32_t p) const {
    if (committed[p]) {
        return std::max(barrier[p], entry_of(*committed[p]));
    }
    return barrier[p];
}

void state_record::advance(std::uint32_t p) {
    if (!committed[p]) {
        return;
    }
    while (true) {
        const auto it = done.find({p, entry_of(*committed[p]) + 1});
        if (it == done.end()) {
            return;
        }
        committed[p] = it->second.through_seq;
        done.erase(it);
    }
}

void state_record::trim_ack_ids() {
    while (ack_ids.size() > max_ack_ids) {
        auto oldest = ack_ids.begin();
        for (auto it = ack_ids.begin(); it != ack_ids.end(); ++it) {
            if (it->second.order < oldest->second.order) {
                oldest = it;
            }
        }
        ack_ids.erase(oldest);
    }
}

std::map<std::string, std::string> encode(const state_record& s) {
    std::map<std::string, std::string> m;
    m["version"] = std::to_string(s.version);
    m["epoch"] = std::to_string(s.epoch);
    m["resnapshot"] = s.resnapshot ? "1" : "0";
    m["partitions"] = std::to_string(s.partitions);
    for (std::uint32_t p = 0; p < s.partitions; ++p) {
        m[pk("ledger.", p)] = std::to_string(s.ledger[p]);
        m[pk("barrier.", p)] = std::to_string(s.barrier[p]);
        m[pk("next.", p)] = std::to_string(s.next[p]);
        if (s.committed[p]) {
            m[pk("committed.", p)] = std::to_string(*s.committed[p]);
        }
    }
    m["snap.done"] = s.snap_done ? "1" : "0";
    m["snap.holder"] = s.snap_holder;
    m["snap.expiry"] = std::to_string(s.snap_expiry_ms);
    m["snap.pos"] = std::to_string(s.snap_pos_partition) + "," + std::to_string(s.snap_pos_entry);
    if (s.snap_final) {
        m["snap.final"] = pair_text(*s.snap_final);
    }
    if (s.snap_acked) {
        m["snap.acked"] = pair_text(*s.snap_acked);
    }
    for (const auto& [k, l] : s.leases) {
        m[pk2("lease.", k.first, k.second)] = std::to_string(l.through_entry) + "," +
                                              std::to_string(l.through_seq) + "," + l.holder + "," +
                                              std::to_string(l.expiry_ms);
    }
    for (const auto& [k, d] : s.done) {
        m[pk2("done.", k.first, k.second)] =
            std::to_string(d.through_entry) + "," + std::to_string(d.through_seq);
    }
    for (const auto& [id, a] : s.ack_ids) {
        m["ackid." + id] = std::to_string(a.partition) + "," + std::to_string(a.epoch) + "," +
                           std::to_string(a.sequence) + "," + std::to_string(a.order);
    }
    m["ack.order"] = std::to_string(s.ack_order);
    m["owner"] = s.owner;
    return m;
}

result<state_record> decode(const std::map<std::string, std::string>& props) {
    state_record s;
    const auto get = [&](const std::string& k) -> const std::string* {
        auto it = props.find(k);
        return it == props.end() ? nullptr : &it->second;
    };
    const auto bad = [] {
        return error(errc::invalid_argument);
    };
    if (const auto* v = get("version"); v == nullptr || !parse(*v, s.version)) {
        if (v == nullptr) {
            return s;  // no record yet
        }
        return bad();
    }
    std::uint32_t n = 0;
    if (const auto* v = get("partitions"); v == nullptr || !parse(*v, n) || n > 100000) {
        return bad();
    }
    s.set_partitions(n);
    if (const auto* v = get("epoch"); v == nullptr || !parse(*v, s.epoch)) {
        return bad();
    }
    if (const auto* v = get("resnapshot")) {
        s.resnapshot = *v == "1";
    }
    for (std::uint32_t p = 0; p < n; ++p) {
        const auto* l = get(pk("ledger.", p));
        const auto* b = get(pk("barrier.", p));
        const auto* nx = get(pk("next.", p));
        if (l == nullptr || b == nullptr || nx == nullptr || !parse(*l, s.ledger[p]) ||
            !parse(*b, s.barrier[p]) || !parse(*nx, s.next[p])) {
            return bad();
        }
        if (const auto* c = get(pk("committed.", p))) {
            std::uint64_t v = 0;
            if (!parse(*c, v)) {
                return bad();
            }
            s.committed[p] = v;
        }
    }
    if (const auto* v = get("snap.done")) {
        s.snap_done = *v == "1";
    }
    if (const auto* v = get("snap.holder")) {
        s.snap_holder = *v;
    }
    if (const auto* v = get("snap.expiry"); v != nullptr && !parse(*v, s.snap_expiry_ms)) {
        return bad();
    }
    if (const auto* v = get("snap.pos")) {
        auto f = split(*v, ',');
        if (f.size() != 2 || !parse(f[0], s.snap_pos_partition) || !parse(f[1], s.snap_pos_entry)) {
            return bad();
        }
    }
    if (const auto* v = get("snap.final")) {
        std::pair<std::uint32_t, std::uint64_t> x;
        if (!parse_pair(*v, x)) {
            return bad();
        }
        s.snap_final = x;
    }
    if (const auto* v = get("snap.acked")) {
        std::pair<std::uint32_t, std::uint64_t> x;
        if (!parse_pair(*v, x)) {
            return bad();
        }
        s.snap_acked = x;
    }
    if (const auto* v = get("ack.order"); v != nullptr && !parse(*v, s.ack_order)) {
        return bad();
    }
    if (const auto* v = get("owner")) {
        s.owner = *v;
    }
    for (const auto& [k, v] : props) {
        std::string_view key = k;
        if (key.starts_with("lease.") || key.starts_with("done.")) {
            const bool is_lease = key.starts_with("lease.");
            auto kf = split(key.substr(is_lease ? 6 : 5), '.');
            std::uint32_t p = 0;
            std::int64_t from = 0;
            if (kf.size() != 2 || !parse(kf[0], p) || !parse(kf[1], from) || p >= n) {
                return bad();
            }
            auto f = split(v, ',');
            if (is_lease) {
                lease_entry l;
                if (f.size() != 4 || !parse(f[0], l.through_entry) || !parse(f[1], l.through_seq) ||
                    !parse(f[3], l.expiry_ms)) {
                    return bad();
                }
                l.holder = std::string(f[2]);
                s.leases[{p, from}] = l;
            } else {
                done_entry d;
                if (f.size() != 2 || !parse(f[0], d.through_entry) || !parse(f[1], d.through_seq)) {
                    return bad();
                }
                s.done[{p, from}] = d;
            }
        } else if (key.starts_with("ackid.")) {
            auto f = split(v, ',');
            ack_record a;
            if (f.size() != 4 || !parse(f[0], a.partition) || !parse(f[1], a.epoch) ||
                !parse(f[2], a.sequence) || !parse(f[3], a.order)) {
                return bad();
            }
            s.ack_ids[std::string(key.substr(6))] = a;
        }
    }
    return s;
}

}  // namespace nereus::events::detail
