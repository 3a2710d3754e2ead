#include "nereus/broker/compacted_view.h"

#include "nereus/base/crc32c.h"
#include "nereus/proto/server_error.h"

#include <algorithm>
#include <cstring>

namespace nereus::broker {

namespace {

constexpr char magic[8] = {'N', 'C', 'M', 'P', 'S', 'N', 'A', 'P'};
constexpr std::uint32_t format_version = 1;

template <class T>
void put_le(std::vector<std::byte>& out, T v) {
    for (std::size_t i = 0; i < sizeof(T); ++i) {
        out.push_back(static_cast<std::byte>((static_cast<std::uint64_t>(v) >> (8 * i)) & 0xff));
    }
}

class reader {
public:
    explicit reader(std::span<const std::byte> b) : b_(b) {}
    template <class T>
    bool get(T& v) {
        if (b_.size() - at_ < sizeof(T)) {
            return false;
        }
        std::uint64_t x = 0;
        for (std::size_t i = 0; i < sizeof(T); ++i) {
            x |= static_cast<std::uint64_t>(b_[at_ + i]) << (8 * i);
        }
        v = static_cast<T>(x);
        at_ += sizeof(T);
        return true;
    }
    bool bytes(std::size_t n, std::span<const std::byte>& out) {
        if (b_.size() - at_ < n) {
            return false;
        }
        out = b_.subspan(at_, n);
        at_ += n;
        return true;
    }
    std::size_t at() const { return at_; }

private:
    std::span<const std::byte> b_;
    std::size_t at_ = 0;
};

}  // namespace

std::size_t compacted_view::lower_bound(std::uint64_t id) const {
    auto it =
        std::lower_bound(entries.begin(), entries.end(), id,
                         [](const compacted_entry& e, std::uint64_t x) { return e.entry_id < x; });
    return static_cast<std::size_t>(it - entries.begin());
}

std::uint64_t compacted_view::data_bytes() const {
    std::uint64_t n = 0;
    for (const auto& e : entries) {
        n += e.data ? e.data->size() : 0;
    }
    return n;
}

std::vector<std::byte> encode_compacted_view(const compacted_view& v) {
    std::vector<std::byte> out(sizeof(magic));
    std::memcpy(out.data(), magic, sizeof(magic));
    out.reserve(48 + v.data_bytes() + v.entries.size() * 24);
    put_le<std::uint32_t>(out, format_version);
    put_le<std::uint64_t>(out, v.ledger_id);
    put_le<std::uint64_t>(out, v.end);
    put_le<std::uint64_t>(out, v.keys);
    put_le<std::uint32_t>(out, static_cast<std::uint32_t>(v.entries.size()));
    for (const auto& e : v.entries) {
        put_le<std::uint64_t>(out, e.entry_id);
        put_le<std::int64_t>(out, e.publish_time);
        put_le<std::uint32_t>(out, e.batch_size);
        const std::size_t n = e.data ? e.data->size() : 0;
        put_le<std::uint32_t>(out, static_cast<std::uint32_t>(n));
        if (n > 0) {
            const auto at = out.size();
            out.resize(at + n);
            std::memcpy(out.data() + at, e.data->data(), n);
        }
    }
    put_le<std::uint32_t>(out, crc32c::value(std::span<const std::byte>(out)));
    return out;
}

result<compacted_view> decode_compacted_view(std::span<const std::byte> bytes) {
    const auto bad = [] {
        return nereus::error(proto::error_kind::metadata_failure);
    };
    if (bytes.size() < sizeof(magic) + 4 + 8 + 8 + 8 + 4 + 4 ||
        std::memcmp(bytes.data(), magic, sizeof(magic)) != 0) {
        return bad();
    }
    const auto body = bytes.first(bytes.size() - 4);
    reader tail(bytes.subspan(bytes.size() - 4));
    std::uint32_t crc = 0;
    if (!tail.get(crc) || crc != crc32c::value(body)) {
        return bad();
    }
    reader r(body);
    std::span<const std::byte> skip;
    std::uint32_t version = 0;
    std::uint32_t count = 0;
    compacted_view v;
    if (!r.bytes(sizeof(magic), skip) || !r.get(version) || version != format_version ||
        !r.get(v.ledger_id) || !r.get(v.end) || !r.get(v.keys) || !r.get(count)) {
        return bad();
    }
    v.entries.reserve(std::min<std::size_t>(count, body.size() / 24));
    for (std::uint32_t i = 0; i < count; ++i) {
        compacted_entry e;
        std::uint32_t n = 0;
        std::span<const std::byte> data;
        if (!r.get(e.entry_id) || !r.get(e.publish_time) || !r.get(e.batch_size) || !r.get(n) ||
            !r.bytes(n, data)) {
            return bad();
        }
        if (e.entry_id >= v.end ||
            (!v.entries.empty() && v.entries.back().entry_id >= e.entry_id)) {
            return bad();
        }
        e.data = std::make_shared<const std::vector<std::byte>>(data.begin(), data.end());
        v.entries.push_back(std::move(e));
    }
    if (r.at() != body.size()) {
        return bad();
    }
    return v;
}

}  // namespace nereus::broker
