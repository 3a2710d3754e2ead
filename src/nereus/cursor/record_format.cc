#include "nereus/cursor/record_format.h"

#include "nereus/base/crc32c.h"
#include "nereus/cursor/errc.h"

#include <cstring>
#include <limits>
#include <type_traits>

namespace nereus::cursor::format {
namespace {

// ---- writing ----

void put_u8(std::string& out, std::uint8_t v) {
    out.push_back(static_cast<char>(v));
}
void put_fixed(std::string& out, std::uint64_t v, int bytes) {
    for (int i = 0; i < bytes; ++i) {
        out.push_back(static_cast<char>((v >> (8 * i)) & 0xffU));
    }
}
void put_varint(std::string& out, std::uint64_t v) {
    while (v >= 0x80) {
        out.push_back(static_cast<char>((v & 0x7fU) | 0x80U));
        v >>= 7;
    }
    out.push_back(static_cast<char>(v));
}
void put_str(std::string& out, std::string_view s) {
    put_varint(out, s.size());
    out.append(s);
}
// varint size, then ceil(size / 8) bytes, bit i in byte i / 8 at position i % 8.
void put_bits(std::string& out, const batch_bits& b) {
    put_varint(out, b.size());
    std::size_t left = (std::size_t{b.size()} + 7) / 8;
    for (auto w : b.words()) {
        for (int i = 0; i < 8 && left > 0; ++i, --left) {
            out.push_back(static_cast<char>((w >> (8 * i)) & 0xffU));
        }
    }
}
void put_props(std::string& out, const property_map& props) {
    put_varint(out, props.size());
    for (const auto& [k, v] : props) {
        put_str(out, k);
        put_str(out, v);
    }
}

std::string begin_record(record_kind kind, std::size_t reserve) {
    std::string out;
    out.reserve(header_size + reserve + trailer_size);
    put_fixed(out, magic, 4);
    put_fixed(out, format_version, 2);
    put_u8(out, static_cast<std::uint8_t>(kind));
    put_u8(out, 0);
    put_fixed(out, 0, 4);  // body length, patched by end_record
    return out;
}
std::string end_record(std::string out) {
    const auto body = static_cast<std::uint32_t>(out.size() - header_size);
    for (int i = 0; i < 4; ++i) {
        out[8 + static_cast<std::size_t>(i)] = static_cast<char>((body >> (8 * i)) & 0xffU);
    }
    put_fixed(out, crc32c::value(out.data(), out.size()), 4);
    return out;
}

// Offsets of ranges, batches and redeliveries are gap-encoded from MDO: each value is stored as
// (value - floor), where floor starts at MDO and becomes previous + 1 (ranges: previous end + 1,
// since ranges are never adjacent). So only canonical, strictly ordered states are encodable.
void put_state(std::string& out, const cursor_state& s) {
    put_varint(out, s.mark_delete());
    put_varint(out, s.ranges().size());
    offset floor = s.mark_delete() + 1;
    s.ranges().for_each([&](const offset_range& r) {
        put_varint(out, r.begin - floor);
        put_varint(out, r.end - r.begin - 1);
        floor = r.end + 1;
    });
    put_varint(out, s.batches().size());
    floor = s.mark_delete();
    for (const auto& [e, b] : s.batches()) {
        put_varint(out, e - floor);
        put_bits(out, b);
        floor = e + 1;
    }
    put_props(out, s.properties());
    put_varint(out, s.redeliveries().size());
    floor = s.mark_delete();
    for (const auto& [e, c] : s.redeliveries()) {
        put_varint(out, e - floor);
        put_varint(out, c);
        floor = e + 1;
    }
}

// ---- reading ----

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
    bool fixed(std::uint64_t& v, int bytes) {
        if (in_.size() - pos_ < static_cast<std::size_t>(bytes)) {
            return false;
        }
        v = 0;
        for (int i = 0; i < bytes; ++i) {
            v |= std::uint64_t{static_cast<std::uint8_t>(in_[pos_++])} << (8 * i);
        }
        return true;
    }
    // Canonical LEB128 (no redundant trailing zero groups), at most 10 bytes.
    bool varint(std::uint64_t& v) {
        v = 0;
        for (int shift = 0; shift < 64; shift += 7) {
            std::uint8_t b = 0;
            if (!u8(b)) {
                return false;
            }
            if (shift == 63 && b > 1) {
                return false;
            }
            v |= std::uint64_t{b & 0x7fU} << shift;
            if ((b & 0x80U) == 0) {
                return b != 0 || shift == 0;
            }
        }
        return false;
    }
    bool count(std::uint64_t& v, std::size_t min_item_bytes) {
        return varint(v) && v <= (in_.size() - pos_) / min_item_bytes;
    }
    bool u32(std::uint32_t& v) {
        std::uint64_t x = 0;
        if (!varint(x) || x > std::numeric_limits<std::uint32_t>::max()) {
            return false;
        }
        v = static_cast<std::uint32_t>(x);
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
    bool bits(batch_bits& b) {
        std::uint32_t size = 0;
        if (!u32(size) || size == 0 || size > batch_bits::max_size) {
            return false;
        }
        const std::size_t bytes = (std::size_t{size} + 7) / 8;
        if (bytes > in_.size() - pos_) {
            return false;
        }
        std::vector<std::uint64_t> w((std::size_t{size} + 63) / 64, 0);
        for (std::size_t i = 0; i < bytes; ++i) {
            w[i / 8] |= std::uint64_t{static_cast<std::uint8_t>(in_[pos_++])} << (8 * (i % 8));
        }
        b = batch_bits::from_words(size, std::move(w));
        return b.valid();
    }
    bool props(property_map& out) {
        std::uint64_t n = 0;
        if (!count(n, 2)) {
            return false;
        }
        for (std::uint64_t i = 0; i < n; ++i) {
            std::string k;
            std::string v;
            if (!str(k) || !str(v) || k.empty()) {
                return false;
            }
            if (!out.empty() && !(out.rbegin()->first < k)) {
                return false;  // keys strictly ascending
            }
            out.emplace_hint(out.end(), std::move(k), std::move(v));
        }
        return true;
    }
    bool done() const { return pos_ == in_.size(); }
    bool fixed32(std::uint32_t& v) {
        std::uint64_t x = 0;
        if (!fixed(x, 4)) {
            return false;
        }
        v = static_cast<std::uint32_t>(x);
        return true;
    }

private:
    std::string_view in_;
    std::size_t pos_ = 0;
};

bool add(offset a, std::uint64_t b, offset& out) {
    if (a > std::numeric_limits<offset>::max() - b) {
        return false;
    }
    out = a + b;
    return true;
}

bool get_state(reader& r, cursor_state& s) {
    std::uint64_t mdo = 0;
    std::uint64_t n = 0;
    if (!r.varint(mdo) || !r.count(n, 2)) {
        return false;
    }
    s = cursor_state(mdo);
    offset floor = 0;
    if (n > 0 && !add(mdo, 1, floor)) {
        return false;
    }
    for (std::uint64_t i = 0; i < n; ++i) {
        std::uint64_t gap = 0;
        std::uint64_t len = 0;
        offset b = 0;
        offset e = 0;
        if (!r.varint(gap) || !r.varint(len) || !add(floor, gap, b) || !add(b, len, e) ||
            !add(e, 1, e)) {
            return false;
        }
        s.mutable_ranges().append(b, e);
        if (!add(e, 1, floor)) {
            return false;
        }
    }
    if (!r.count(n, 3)) {
        return false;
    }
    floor = mdo;
    for (std::uint64_t i = 0; i < n; ++i) {
        std::uint64_t gap = 0;
        offset e = 0;
        batch_bits b;
        if (!r.varint(gap) || !add(floor, gap, e) || !r.bits(b) || b.none() ||
            s.ranges().contains(e)) {
            return false;
        }
        s.put_batch(e, std::move(b));
        if (!add(e, 1, floor)) {
            return false;
        }
    }
    property_map props;
    if (!r.props(props)) {
        return false;
    }
    for (auto& [k, v] : props) {
        s.put_property(k, v);
    }
    if (!r.count(n, 2)) {
        return false;
    }
    floor = mdo;
    for (std::uint64_t i = 0; i < n; ++i) {
        std::uint64_t gap = 0;
        std::uint32_t c = 0;
        offset e = 0;
        if (!r.varint(gap) || !add(floor, gap, e) || !r.u32(c) || c == 0 ||
            s.ranges().contains(e)) {
            return false;
        }
        s.set_redelivery(e, c);
        if (!add(e, 1, floor)) {
            return false;
        }
    }
    return s.check();
}

// Verifies the frame and returns the body. `bad` is the record's corruption code.
result<std::string_view> open_record(std::string_view bytes, record_kind kind, errc bad) {
    if (bytes.size() < header_size + trailer_size) {
        return nereus::error(bad);
    }
    reader h(bytes.substr(0, header_size));
    std::uint64_t m = 0;
    std::uint64_t ver = 0;
    std::uint8_t k = 0;
    std::uint8_t reserved = 0;
    std::uint64_t len = 0;
    h.fixed(m, 4);
    h.fixed(ver, 2);
    h.u8(k);
    h.u8(reserved);
    h.fixed(len, 4);
    if (m != magic || k != static_cast<std::uint8_t>(kind) || reserved != 0 ||
        len != bytes.size() - header_size - trailer_size) {
        return nereus::error(bad);
    }
    reader t(bytes.substr(bytes.size() - trailer_size));
    std::uint64_t crc = 0;
    t.fixed(crc, 4);
    if (crc != crc32c::value(bytes.data(), bytes.size() - trailer_size)) {
        return nereus::error(bad);
    }
    if (ver != format_version) {
        return nereus::error(errc::unsupported_format);
    }
    return bytes.substr(header_size, len);
}

void put_op(std::string& out, const state_op& op) {
    std::visit(
        [&](const auto& o) {
            using T = std::decay_t<decltype(o)>;
            if constexpr (std::is_same_v<T, ack_range_op>) {
                put_u8(out, 1);
                put_varint(out, o.begin);
                put_varint(out, o.end - o.begin - 1);
            } else if constexpr (std::is_same_v<T, ack_batch_op>) {
                put_u8(out, 2);
                put_varint(out, o.entry);
                put_bits(out, o.acked);
            } else if constexpr (std::is_same_v<T, ack_cumulative_op>) {
                put_u8(out, 3);
                put_varint(out, o.entry);
                put_u8(out, o.prefix_end ? 1 : 0);
                if (o.prefix_end) {
                    put_varint(out, *o.prefix_end);
                    put_varint(out, o.batch_size);
                }
                put_props(out, o.props);
            } else if constexpr (std::is_same_v<T, put_property_op>) {
                put_u8(out, 4);
                put_str(out, o.key);
                put_str(out, o.value);
            } else if constexpr (std::is_same_v<T, remove_property_op>) {
                put_u8(out, 5);
                put_str(out, o.key);
            } else if constexpr (std::is_same_v<T, replace_properties_op>) {
                put_u8(out, 6);
                put_props(out, o.props);
            } else if constexpr (std::is_same_v<T, redelivery_op>) {
                put_u8(out, 7);
                put_varint(out, o.entry);
                put_varint(out, o.count);
            }
        },
        op);
}

bool get_op(reader& r, state_op& op) {
    std::uint8_t tag = 0;
    if (!r.u8(tag)) {
        return false;
    }
    switch (tag) {
        case 1: {
            ack_range_op o;
            std::uint64_t len = 0;
            if (!r.varint(o.begin) || !r.varint(len) || !add(o.begin, len, o.end) ||
                !add(o.end, 1, o.end)) {
                return false;
            }
            op = o;
            return true;
        }
        case 2: {
            ack_batch_op o;
            if (!r.varint(o.entry) || !r.bits(o.acked)) {
                return false;
            }
            op = std::move(o);
            return true;
        }
        case 3: {
            ack_cumulative_op o;
            std::uint8_t flags = 0;
            if (!r.varint(o.entry) || !r.u8(flags) || flags > 1) {
                return false;
            }
            if (flags == 1) {
                std::uint32_t pe = 0;
                if (!r.u32(pe) || !r.u32(o.batch_size) || o.batch_size == 0 ||
                    o.batch_size > batch_bits::max_size || pe > o.batch_size) {
                    return false;
                }
                o.prefix_end = pe;
            }
            if (!r.props(o.props)) {
                return false;
            }
            op = std::move(o);
            return true;
        }
        case 4: {
            put_property_op o;
            if (!r.str(o.key) || !r.str(o.value) || o.key.empty()) {
                return false;
            }
            op = std::move(o);
            return true;
        }
        case 5: {
            remove_property_op o;
            if (!r.str(o.key) || o.key.empty()) {
                return false;
            }
            op = std::move(o);
            return true;
        }
        case 6: {
            replace_properties_op o;
            if (!r.props(o.props)) {
                return false;
            }
            op = std::move(o);
            return true;
        }
        case 7: {
            redelivery_op o;
            if (!r.varint(o.entry) || !r.u32(o.count)) {
                return false;
            }
            op = o;
            return true;
        }
        default:
            return false;
    }
}

}  // namespace

std::string encode_root(const root_record& r) {
    std::string out =
        begin_record(record_kind::root, r.spilled ? 64 : 32 + r.state.estimated_bytes());
    put_varint(out, r.generation);
    put_varint(out, r.epoch);
    put_u8(out, static_cast<std::uint8_t>(r.life));
    put_varint(out, r.commit_seq);
    put_varint(out, r.writer);
    put_u8(out, r.spilled ? 1 : 0);
    if (!r.spilled) {
        put_state(out, r.state);
    } else {
        put_varint(out, r.commit_seq - r.snapshot.seq);  // the delta count
        put_varint(out, r.snapshot.writer);
        put_varint(out, r.snapshot.nonce);
        put_varint(out, r.snapshot.size);
        put_fixed(out, r.snapshot.checksum, 4);
    }
    return end_record(std::move(out));
}

result<root_record> decode_root(std::string_view bytes) {
    auto body = open_record(bytes, record_kind::root, errc::corrupt_root);
    if (!body) {
        return nereus::error(body.error());
    }
    reader r(*body);
    root_record out;
    std::uint8_t life = 0;
    std::uint8_t mode = 0;
    if (!r.varint(out.generation) || !r.varint(out.epoch) || !r.u8(life) ||
        life < static_cast<std::uint8_t>(lifecycle::protection_pending) ||
        life > static_cast<std::uint8_t>(lifecycle::deleted) || !r.varint(out.commit_seq) ||
        !r.varint(out.writer) || !r.u8(mode) || mode > 1) {
        return nereus::error(errc::corrupt_root);
    }
    out.life = static_cast<lifecycle>(life);
    out.spilled = mode == 1;
    if (!out.spilled) {
        if (!get_state(r, out.state)) {
            return nereus::error(errc::corrupt_root);
        }
    } else {
        std::uint64_t deltas = 0;
        if (!r.varint(deltas) || deltas > out.commit_seq || !r.varint(out.snapshot.writer) ||
            !r.varint(out.snapshot.nonce) || !r.varint(out.snapshot.size) ||
            out.snapshot.size < header_size + trailer_size || !r.fixed32(out.snapshot.checksum)) {
            return nereus::error(errc::corrupt_root);
        }
        out.snapshot.seq = out.commit_seq - deltas;
    }
    if (!r.done()) {
        return nereus::error(errc::corrupt_root);
    }
    return out;
}

std::string encode_snapshot(const snapshot_header& h, const cursor_state& s) {
    std::string out =
        begin_record(record_kind::snapshot, h.identity.size() + 32 + s.estimated_bytes());
    put_str(out, h.identity);
    put_varint(out, h.generation);
    put_varint(out, h.seq);
    put_state(out, s);
    return end_record(std::move(out));
}

result<std::pair<snapshot_header, cursor_state>> decode_snapshot(std::string_view bytes) {
    auto body = open_record(bytes, record_kind::snapshot, errc::corrupt_snapshot);
    if (!body) {
        return nereus::error(body.error());
    }
    reader r(*body);
    std::pair<snapshot_header, cursor_state> out;
    if (!r.str(out.first.identity) || !r.varint(out.first.generation) || !r.varint(out.first.seq) ||
        !get_state(r, out.second) || !r.done()) {
        return nereus::error(errc::corrupt_snapshot);
    }
    return out;
}

namespace {

constexpr std::uint8_t delta_tag(std::uint16_t version) {
    return static_cast<std::uint8_t>((static_cast<unsigned>(record_kind::delta) << 4U) |
                                     (version & 0x0fU));
}

// crc32c over varint generation, varint seq, then the record's bytes before the trailer.
std::uint32_t delta_crc(std::uint64_t generation, std::uint64_t seq, std::string_view bytes) {
    std::string bound;
    put_varint(bound, generation);
    put_varint(bound, seq);
    return crc32c::extend(crc32c::value(bound.data(), bound.size()), bytes.data(), bytes.size());
}

}  // namespace

std::string encode_delta(const delta_record& d) {
    std::string out;
    out.reserve(delta_overhead + d.ops.size() * 12);
    put_u8(out, delta_tag(format_version));
    for (const auto& op : d.ops) {
        put_op(out, op);
    }
    put_fixed(out, delta_crc(d.generation, d.seq, out), 4);
    return out;
}

result<delta_record> decode_delta(std::string_view bytes,
                                  std::uint64_t generation,
                                  std::uint64_t seq) {
    // At least the tag, one op (tag + a varint) and the trailer.
    if (bytes.size() < delta_overhead + 2) {
        return nereus::error(errc::corrupt_delta);
    }
    const std::string_view head = bytes.substr(0, bytes.size() - trailer_size);
    reader t(bytes.substr(head.size()));
    std::uint32_t crc = 0;
    t.fixed32(crc);
    const auto tag = static_cast<std::uint8_t>(head[0]);
    if ((tag >> 4U) != static_cast<unsigned>(record_kind::delta) ||
        crc != delta_crc(generation, seq, head)) {
        return nereus::error(errc::corrupt_delta);
    }
    if (tag != delta_tag(format_version)) {
        return nereus::error(errc::unsupported_format);
    }
    reader r(head.substr(1));
    delta_record out;
    out.generation = generation;
    out.seq = seq;
    while (!r.done()) {
        if (!get_op(r, out.ops.emplace_back())) {
            return nereus::error(errc::corrupt_delta);
        }
    }
    return out;
}

std::size_t encoded_state_size(const cursor_state& s) {
    std::string out;
    out.reserve(s.estimated_bytes());
    put_state(out, s);
    return out.size();
}

}  // namespace nereus::cursor::format
