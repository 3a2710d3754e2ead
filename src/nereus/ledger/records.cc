#include "nereus/ledger/records.h"

#include "nereus/base/crc32c.h"
#include "nereus/cursor/cursor_keys.h"
#include "nereus/ledger/errc.h"

#include <cstring>
#include <limits>

namespace nereus::ledger::format {
namespace {

constexpr std::uint32_t kMagic = 0x47444c4e;  // "NLDG"
constexpr std::uint16_t kVersion = 2;         // 2: evictions carry the recorded epoch
constexpr std::size_t kFrame = 16;
enum class kind : std::uint8_t { registry = 1, retention = 2, activity = 3 };

class writer {
public:
    void u8(std::uint8_t v) { out_.push_back(static_cast<char>(v)); }
    void fixed(std::uint64_t v, int n) {
        for (int i = 0; i < n; ++i) {
            out_.push_back(static_cast<char>((v >> (8 * i)) & 0xff));
        }
    }
    void varint(std::uint64_t v) {
        while (v >= 0x80) {
            out_.push_back(static_cast<char>((v & 0x7f) | 0x80));
            v >>= 7;
        }
        out_.push_back(static_cast<char>(v));
    }
    void svarint(std::int64_t v) {
        varint((static_cast<std::uint64_t>(v) << 1) ^ static_cast<std::uint64_t>(v >> 63));
    }
    void str(std::string_view s) {
        varint(s.size());
        out_.append(s);
    }
    std::string& bytes() { return out_; }

private:
    std::string out_;
};

class reader {
public:
    explicit reader(std::string_view in) : in_(in) {}
    bool u8(std::uint8_t& v) {
        if (pos_ >= in_.size()) {
            return false;
        }
        v = static_cast<std::uint8_t>(in_[pos_++]);
        return true;
    }
    bool varint(std::uint64_t& v) {
        v = 0;
        for (int shift = 0, i = 0; i < 10; ++i, shift += 7) {
            std::uint8_t b = 0;
            if (!u8(b)) {
                return false;
            }
            if (i == 9 && b > 1) {
                return false;
            }
            v |= static_cast<std::uint64_t>(b & 0x7f) << shift;
            if ((b & 0x80) == 0) {
                return !(b == 0 && i > 0);  // canonical: no redundant zero group
            }
        }
        return false;
    }
    bool svarint(std::int64_t& v) {
        std::uint64_t u = 0;
        if (!varint(u)) {
            return false;
        }
        v = static_cast<std::int64_t>((u >> 1) ^ (~(u & 1) + 1));
        return true;
    }
    bool str(std::string& s) {
        std::uint64_t n = 0;
        if (!varint(n) || n > in_.size() - pos_) {
            return false;
        }
        s.assign(in_.substr(pos_, n));
        pos_ += n;
        return true;
    }
    bool boolean(bool& b) {
        std::uint8_t v = 0;
        if (!u8(v) || v > 1) {
            return false;
        }
        b = v == 1;
        return true;
    }
    [[nodiscard]] bool done() const { return pos_ == in_.size(); }
    [[nodiscard]] std::size_t remaining() const { return in_.size() - pos_; }

private:
    std::string_view in_;
    std::size_t pos_ = 0;
};

std::uint64_t get_le(std::string_view s, std::size_t at, int n) {
    std::uint64_t v = 0;
    for (int i = 0; i < n; ++i) {
        v |= static_cast<std::uint64_t>(static_cast<std::uint8_t>(s[at + i])) << (8 * i);
    }
    return v;
}

std::string frame(kind k, const std::string& body) {
    writer w;
    w.fixed(kMagic, 4);
    w.fixed(kVersion, 2);
    w.u8(static_cast<std::uint8_t>(k));
    w.u8(0);
    w.fixed(body.size(), 4);
    std::string out = std::move(w.bytes());
    out += body;
    const std::uint32_t crc = crc32c::value(out.data(), out.size());
    for (int i = 0; i < 4; ++i) {
        out.push_back(static_cast<char>((crc >> (8 * i)) & 0xff));
    }
    return out;
}

result<std::string_view> unframe(kind k, std::string_view in) {
    if (in.size() < kFrame || get_le(in, 0, 4) != kMagic ||
        get_le(in, 6, 1) != static_cast<std::uint8_t>(k) || get_le(in, 7, 1) != 0 ||
        get_le(in, 8, 4) != in.size() - kFrame) {
        return nereus::error(errc::corrupt_record);
    }
    const std::uint32_t crc = crc32c::value(in.data(), in.size() - 4);
    if (crc != get_le(in, in.size() - 4, 4)) {
        return nereus::error(errc::corrupt_record);
    }
    if (get_le(in, 4, 2) != kVersion) {
        return nereus::error(errc::unsupported_format);
    }
    return in.substr(12, in.size() - kFrame);
}

void put_eviction(writer& w, const eviction& e) {
    w.str(e.cursor);
    w.varint(e.generation);
    w.varint(e.from);
    w.varint(e.to);
    w.varint(e.epoch);
}

bool get_eviction(reader& r, eviction& e) {
    return r.str(e.cursor) && r.varint(e.generation) && r.varint(e.from) && r.varint(e.to) &&
           r.varint(e.epoch) && e.from <= e.to;
}

bool get_evictions(reader& r, std::vector<eviction>& out) {
    std::uint64_t n = 0;
    if (!r.varint(n) || n > r.remaining()) {
        return false;
    }
    out.resize(n);
    for (auto& e : out) {
        if (!get_eviction(r, e)) {
            return false;
        }
    }
    return true;
}

}  // namespace

ledger_keys ledger_keys::make(std::string_view topic) {
    const std::string base = "ledgers/" + cursor::escape_name(topic) + "/";
    return ledger_keys{base + "registry", base + "retention", base + "owner", base + "activity"};
}

std::optional<std::string> unescape_name(std::string_view s) {
    std::string out;
    for (std::size_t i = 0; i < s.size(); ++i) {
        if (s[i] != '_') {
            out.push_back(s[i]);
            continue;
        }
        if (i + 2 >= s.size()) {
            return std::nullopt;
        }
        auto hex = [](char c) -> int {
            if (c >= '0' && c <= '9') {
                return c - '0';
            }
            if (c >= 'a' && c <= 'f') {
                return c - 'a' + 10;
            }
            return -1;
        };
        const int hi = hex(s[i + 1]);
        const int lo = hex(s[i + 2]);
        if (hi < 0 || lo < 0) {
            return std::nullopt;
        }
        out.push_back(static_cast<char>(hi * 16 + lo));
        i += 2;
    }
    return out;
}

std::string encode(const registry_record& r) {
    writer w;
    w.varint(r.stream_id);
    w.varint(r.ledger_id);
    w.u8(static_cast<std::uint8_t>(r.state));
    return frame(kind::registry, w.bytes());
}

result<registry_record> decode_registry(std::string_view bytes) {
    auto body = unframe(kind::registry, bytes);
    if (!body) {
        return nereus::error(body.error());
    }
    reader rd(*body);
    registry_record r;
    std::uint8_t st = 0;
    if (!rd.varint(r.stream_id) || !rd.varint(r.ledger_id) || !rd.u8(st) || st < 1 || st > 2 ||
        !rd.done()) {
        return nereus::error(errc::corrupt_record);
    }
    r.state = static_cast<topic_state>(st);
    return r;
}

std::string encode(const retention_root& r) {
    writer w;
    w.varint(r.owner);
    w.varint(r.claim_epoch);
    w.varint(r.start);
    w.varint(r.floor);
    w.u8(r.trim ? 1 : 0);
    if (r.trim) {
        w.varint(r.trim->target);
        w.varint(r.trim->evictions.size());
        for (const auto& e : r.trim->evictions) {
            put_eviction(w, e);
        }
    }
    w.svarint(r.policy.time_ms);
    w.svarint(r.policy.size_bytes);
    w.varint(r.policy.backlog_limit_entries);
    w.u8(r.has_trimmed_time ? 1 : 0);
    if (r.has_trimmed_time) {
        w.svarint(r.trimmed_max_time);
    }
    w.varint(r.history.size());
    for (const auto& e : r.history) {
        put_eviction(w, e);
    }
    return frame(kind::retention, w.bytes());
}

result<retention_root> decode_retention(std::string_view bytes) {
    auto body = unframe(kind::retention, bytes);
    if (!body) {
        return nereus::error(body.error());
    }
    reader rd(*body);
    retention_root r;
    bool has_trim = false;
    bool ok = rd.varint(r.owner) && rd.varint(r.claim_epoch) && rd.varint(r.start) &&
              rd.varint(r.floor) && rd.boolean(has_trim) && r.floor >= r.start;
    if (ok && has_trim) {
        pending_trim t;
        ok = rd.varint(t.target) && get_evictions(rd, t.evictions);
        r.trim = std::move(t);
    }
    ok = ok && rd.svarint(r.policy.time_ms) && rd.svarint(r.policy.size_bytes) &&
         rd.varint(r.policy.backlog_limit_entries) && rd.boolean(r.has_trimmed_time);
    if (ok && r.has_trimmed_time) {
        ok = rd.svarint(r.trimmed_max_time);
    }
    ok = ok && get_evictions(rd, r.history) && r.history.size() <= retention_root::kMaxHistory &&
         rd.done();
    if (!ok) {
        return nereus::error(errc::corrupt_record);
    }
    return r;
}

std::string encode(const activity_record& r) {
    writer w;
    w.varint(r.last_active.size());
    for (const auto& [name, t] : r.last_active) {
        w.str(name);
        w.svarint(t);
    }
    return frame(kind::activity, w.bytes());
}

result<activity_record> decode_activity(std::string_view bytes) {
    auto body = unframe(kind::activity, bytes);
    if (!body) {
        return nereus::error(body.error());
    }
    reader rd(*body);
    activity_record r;
    std::uint64_t n = 0;
    bool ok = rd.varint(n) && n <= rd.remaining();
    for (std::uint64_t i = 0; ok && i < n; ++i) {
        std::string name;
        std::int64_t t = 0;
        ok = rd.str(name) && rd.svarint(t) &&
             (r.last_active.empty() || r.last_active.back().first < name);
        r.last_active.emplace_back(std::move(name), t);
    }
    if (!ok || !rd.done()) {
        return nereus::error(errc::corrupt_record);
    }
    return r;
}

void encode_entry_header(const entry_header& h, std::span<std::byte, kEntryHeaderSize> out) {
    out[0] = std::byte{1};
    out[1] = std::byte{0};
    for (int i = 0; i < 4; ++i) {
        out[2 + i] = static_cast<std::byte>((h.batch_size >> (8 * i)) & 0xff);
    }
    const auto t = static_cast<std::uint64_t>(h.publish_time);
    for (int i = 0; i < 8; ++i) {
        out[6 + i] = static_cast<std::byte>((t >> (8 * i)) & 0xff);
    }
}

result<entry_header> decode_entry_header(std::span<const std::byte> entry) {
    if (entry.size() < kEntryHeaderSize || entry[0] != std::byte{1} || entry[1] != std::byte{0}) {
        return nereus::error(errc::corrupt_record);
    }
    entry_header h;
    h.batch_size = 0;
    for (int i = 0; i < 4; ++i) {
        h.batch_size |= static_cast<std::uint32_t>(entry[2 + i]) << (8 * i);
    }
    std::uint64_t t = 0;
    for (int i = 0; i < 8; ++i) {
        t |= static_cast<std::uint64_t>(entry[6 + i]) << (8 * i);
    }
    h.publish_time = static_cast<std::int64_t>(t);
    if (h.batch_size == 0) {
        return nereus::error(errc::corrupt_record);
    }
    return h;
}

}  // namespace nereus::ledger::format
