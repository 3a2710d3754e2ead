#include "nereus/broker/compactor.h"

#include "nereus/base/crc32c.h"
#include "nereus/proto/batch_codec.h"
#include "nereus/proto/compression.h"
#include "nereus/proto/frame_format.h"
#include "nereus/proto/pulsar_api.h"

#include <map>
#include <optional>
#include <set>
#include <string>

namespace nereus::broker {

namespace {

// One stored entry opened: its metadata and (decompressed) payload.
struct opened {
    proto::pb::MessageMetadata md;
    std::span<const std::byte> payload;  // decompressed (views `scratch` or the entry)
};

bool open_entry(const std::vector<std::byte>& stored,
                opened& out,
                std::vector<std::byte>& scratch) {
    std::size_t at = 0;
    if (stored.size() >= 2 && proto::detail::load_be16(stored.data()) == proto::magic_crc32c) {
        at = proto::checksum_section_bytes;
    }
    if (stored.size() < at + 4) {
        return false;
    }
    const std::uint32_t n = proto::detail::load_be32(stored.data() + at);
    at += 4;
    if (stored.size() - at < n) {
        return false;
    }
    out.md.Clear();
    if (!out.md.ParseFromArray(stored.data() + at, static_cast<int>(n))) {
        return false;
    }
    at += n;
    const auto raw = std::span<const std::byte>(stored).subspan(at);
    const auto c = static_cast<proto::compression>(out.md.compression());
    if (c == proto::compression::none) {
        out.payload = raw;
        return true;
    }
    auto d = proto::decompress(c, raw, out.md.uncompressed_size(), scratch);
    if (!d) {
        return false;
    }
    out.payload = *d;
    return true;
}

bool is_batch(const proto::pb::MessageMetadata& md) {
    return md.has_num_messages_in_batch();
}

// headers_and_payload with the 0x0e01 crc32c section.
std::vector<std::byte> serialize(const proto::pb::MessageMetadata& md,
                                 std::span<const std::byte> payload) {
    const auto md_size = md.ByteSizeLong();
    std::vector<std::byte> out(proto::checksum_section_bytes + 4 + md_size + payload.size());
    proto::detail::store_be16(out.data(), proto::magic_crc32c);
    proto::detail::store_be32(out.data() + proto::checksum_section_bytes,
                              static_cast<std::uint32_t>(md_size));
    md.SerializeToArray(out.data() + proto::checksum_section_bytes + 4, static_cast<int>(md_size));
    std::copy(
        payload.begin(), payload.end(),
        out.begin() + static_cast<std::ptrdiff_t>(proto::checksum_section_bytes + 4 + md_size));
    const auto body = std::span<const std::byte>(out).subspan(proto::checksum_section_bytes);
    proto::detail::store_be32(out.data() + proto::magic_bytes, crc32c::value(body));
    return out;
}

struct latest {
    std::uint64_t entry_id = 0;
    std::int32_t index = -1;  // -1: not a batch
    bool tombstone = false;
};

}  // namespace

compaction_result compact(const compacted_view& previous,
                          const std::vector<compaction_input>& after,
                          std::uint64_t ledger_id,
                          std::uint64_t end) {
    compaction_result res;
    res.view.ledger_id = ledger_id;
    res.view.end = end;

    std::vector<compaction_input> all;
    all.reserve(previous.entries.size() + after.size());
    for (const auto& e : previous.entries) {
        all.push_back(compaction_input{e.entry_id, e.publish_time, e.batch_size, e.data});
    }
    for (const auto& e : after) {
        if (e.entry_id >= previous.end && e.entry_id < end && e.data) {
            all.push_back(e);
        }
    }

    // Phase one: the latest message of every key.
    std::map<std::string, latest> last;
    std::vector<bool> parsed(all.size(), false);
    opened o;
    std::vector<std::byte> scratch;
    proto::batch_reader br;
    for (std::size_t i = 0; i < all.size(); ++i) {
        const auto& e = all[i];
        if (!open_entry(*e.data, o, scratch)) {
            ++res.skipped;
            continue;
        }
        if (!is_batch(o.md)) {
            ++res.messages_read;
            parsed[i] = true;
            if (!o.md.has_partition_key()) {
                continue;
            }
            last[o.md.partition_key()] =
                latest{e.entry_id, -1, o.payload.empty() || o.md.null_value()};
            continue;
        }
        br.reset(o.payload, o.md.num_messages_in_batch());
        bool ok = true;
        std::vector<std::pair<std::string, latest>> found;
        for (;;) {
            auto n = br.next();
            if (!n) {
                ok = false;
                break;
            }
            if (!*n) {
                break;
            }
            ++res.messages_read;
            const auto& sm = br.metadata();
            if (sm.compacted_out() || !sm.has_partition_key()) {
                continue;
            }
            found.emplace_back(sm.partition_key(), latest{e.entry_id, br.index(),
                                                          br.payload().empty() || sm.null_value()});
        }
        if (!ok) {
            ++res.skipped;
            continue;
        }
        parsed[i] = true;
        for (auto& [k, l] : found) {
            last[k] = l;
        }
    }

    // What survives, per entry: the indexes (-1 for a whole non-batch entry).
    std::map<std::uint64_t, std::set<std::int32_t>> keep;
    for (const auto& [k, l] : last) {
        (void)k;
        if (!l.tombstone) {
            keep[l.entry_id].insert(l.index);
            ++res.view.keys;
        }
    }

    // Phase two: the kept entries, batches re-built when partly superseded.
    std::uint64_t kept_messages = 0;
    for (std::size_t i = 0; i < all.size(); ++i) {
        const auto& e = all[i];
        auto it = keep.find(e.entry_id);
        if (!parsed[i] || it == keep.end()) {
            continue;
        }
        const auto& idx = it->second;
        if (idx.contains(-1)) {
            res.view.entries.push_back(compacted_entry{e.entry_id, e.publish_time, 1, e.data});
            ++kept_messages;
            continue;
        }
        if (!open_entry(*e.data, o, scratch)) {
            continue;  // parsed in phase one: cannot happen
        }
        const auto total = o.md.num_messages_in_batch();
        if (static_cast<std::int32_t>(idx.size()) == total) {
            res.view.entries.push_back(compacted_entry{e.entry_id, e.publish_time,
                                                       static_cast<std::uint32_t>(total), e.data});
            kept_messages += idx.size();
            continue;
        }
        std::vector<std::byte> payload;
        proto::batch_builder bb(payload);
        br.reset(o.payload, total);
        for (;;) {
            auto n = br.next();
            if (!n || !*n) {
                break;
            }
            if (!idx.contains(br.index())) {
                continue;
            }
            proto::pb::SingleMessageMetadata sm = br.metadata();
            if (!bb.add(sm, br.payload())) {
                break;
            }
        }
        if (bb.count() == 0) {
            continue;
        }
        proto::pb::MessageMetadata md = o.md;
        md.set_num_messages_in_batch(bb.count());
        md.clear_compression();
        md.clear_uncompressed_size();
        md.clear_encryption_keys();
        auto bytes = serialize(md, payload);
        res.view.entries.push_back(
            compacted_entry{e.entry_id, e.publish_time, static_cast<std::uint32_t>(bb.count()),
                            std::make_shared<const std::vector<std::byte>>(std::move(bytes))});
        kept_messages += static_cast<std::uint64_t>(bb.count());
    }
    res.messages_removed = res.messages_read - kept_messages;
    return res;
}

}  // namespace nereus::broker
