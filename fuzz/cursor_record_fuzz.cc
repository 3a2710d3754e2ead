// libFuzzer target: the cursor's persisted records (record_format.h) — the ROOT and SNAPSHOT
// (framed: magic, version, kind, length, crc32c) and the DELTA (tag, ops, crc32c bound to the
// generation and sequence number). Input byte 0 picks the record kind (bits 0-1: root,
// snapshot, delta) and whether the framing is repaired (bit 2): repaired, the rest of the
// input is a record body and the target writes a correct header, length and checksum around it,
// so the search reaches the body decoder instead of dying on the CRC; not repaired, the rest
// is the whole record as read from the store. For deltas, bytes 1 and 2 are the generation and
// sequence number the record is decoded under.
// Checks: no crash / ASan / UBSan report; a decoded state satisfies cursor_state::check();
// and (the decoders are strict about canonical encodings) a record that decodes re-encodes to
// exactly the same bytes, which then decode to an equal state.

#include "nereus/base/crc32c.h"
#include "nereus/cursor/record_format.h"

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>

namespace {

namespace fmt = nereus::cursor::format;

void check(bool ok) {
    if (!ok) {
        std::abort();
    }
}

void put_le(std::string& out, std::uint64_t v, int n) {
    for (int i = 0; i < n; ++i) {
        out.push_back(static_cast<char>((v >> (8U * static_cast<unsigned>(i))) & 0xffU));
    }
}

void put_varint(std::string& out, std::uint64_t v) {
    while (v >= 0x80) {
        out.push_back(static_cast<char>((v & 0x7fU) | 0x80U));
        v >>= 7U;
    }
    out.push_back(static_cast<char>(v));
}

// header | body | crc32c, as record_format.cc frames roots and snapshots.
std::string frame(fmt::record_kind kind, std::string_view body) {
    std::string out;
    put_le(out, fmt::magic, 4);
    put_le(out, fmt::format_version, 2);
    out.push_back(static_cast<char>(kind));
    out.push_back('\0');
    put_le(out, body.size(), 4);
    out.append(body);
    put_le(out, nereus::crc32c::value(out.data(), out.size()), 4);
    return out;
}

// tag | ops | crc32c(varint generation, varint seq, tag | ops).
std::string frame_delta(std::string_view ops, std::uint64_t generation, std::uint64_t seq) {
    std::string out;
    out.push_back(static_cast<char>((static_cast<unsigned>(fmt::record_kind::delta) << 4U) |
                                    (fmt::format_version & 0x0fU)));
    out.append(ops);
    std::string bound;
    put_varint(bound, generation);
    put_varint(bound, seq);
    const auto crc = nereus::crc32c::extend(nereus::crc32c::value(bound.data(), bound.size()),
                                            out.data(), out.size());
    put_le(out, crc, 4);
    return out;
}

void root(const std::string& bytes) {
    auto r = fmt::decode_root(bytes);
    if (!r) {
        return;
    }
    check(r->spilled || r->state.check());
    check(!r->spilled || r->snapshot.seq <= r->commit_seq);
    const std::string again = fmt::encode_root(*r);
    check(again == bytes);
    auto r2 = fmt::decode_root(again);
    check(r2.has_value());
    check(r2->generation == r->generation && r2->epoch == r->epoch && r2->life == r->life &&
          r2->commit_seq == r->commit_seq && r2->writer == r->writer && r2->spilled == r->spilled &&
          r2->state == r->state && r2->snapshot == r->snapshot);
}

void snapshot(const std::string& bytes) {
    auto s = fmt::decode_snapshot(bytes);
    if (!s) {
        return;
    }
    check(s->second.check());
    const std::string again = fmt::encode_snapshot(s->first, s->second);
    check(again == bytes);
    auto s2 = fmt::decode_snapshot(again);
    check(s2.has_value());
    check(s2->first.identity == s->first.identity && s2->first.generation == s->first.generation &&
          s2->first.seq == s->first.seq && s2->second == s->second);
}

void delta(const std::string& bytes, std::uint64_t generation, std::uint64_t seq) {
    auto d = fmt::decode_delta(bytes, generation, seq);
    if (!d) {
        return;
    }
    check(d->generation == generation && d->seq == seq && !d->ops.empty());
    const std::string again = fmt::encode_delta(*d);
    check(again == bytes);
    auto d2 = fmt::decode_delta(again, generation, seq);
    check(d2.has_value() && d2->ops == d->ops);
    // Under another sequence number the same bytes are corrupt (the checksum binds the key).
    check(!fmt::decode_delta(bytes, generation, seq + 1).has_value());
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    if (size < 3) {
        return 0;
    }
    const unsigned mode = data[0];
    const std::uint64_t generation = data[1];
    const std::uint64_t seq = data[2];
    const std::string_view rest(reinterpret_cast<const char*>(data + 3), size - 3);
    const bool repair = (mode & 4U) != 0;
    switch (mode & 3U) {
        case 0:
            root(repair ? frame(fmt::record_kind::root, rest) : std::string(rest));
            break;
        case 1:
            snapshot(repair ? frame(fmt::record_kind::snapshot, rest) : std::string(rest));
            break;
        default:
            delta(repair ? frame_delta(rest, generation, seq) : std::string(rest), generation, seq);
            break;
    }
    return 0;
}
