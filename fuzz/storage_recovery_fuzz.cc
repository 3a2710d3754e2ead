// libFuzzer target: the storage layer's readers of on-disk bytes, over the in-memory
// fault_file_system (nothing touches the real disk). Input byte 0 picks what the rest is:
//   bits 0-1: 0 a segment file through scan_segment (base 0, small index interval);
//             1 a journal file through scan_journal_file (each block it hands out re-checked
//               with check_block and its records walked);
//             2 a checkpoint file through decode_checkpoint;
//             3 whole-store recovery: a store is created (one stream, three appends, closed),
//               then its segment file (bit 3 clear) or its journal file (bit 3 set) is replaced
//               by the bytes, and stream_store::open runs recovery; when it opens, every
//               offset it reports is read back and verify() walks the directory.
//   bit 2: repair the checksums. The rest is then a list of [u8 len][len payload bytes][u8 tweak]
//          built into valid segment records (offsets 0, 1, ...; a tweak with bit 0 set shifts
//          the offset) or journal blocks of such records (seq 1, 2, ...; tweak bit 1 skips a
//          seq), followed by any leftover bytes as a torn tail; for a checkpoint, the magic and
//          version are written and a correct CRC appended. Without it, libFuzzer would rarely get
//          past the first CRC32C.
// Checks: no crash / ASan / UBSan report, and the scan results are self-consistent (valid
// prefix within the file, records = end_offset - base, a clean scan covers the whole file).

#include "nereus/base/crc32c.h"
#include "nereus/base/fault_file_system.h"
#include "nereus/storage/format.h"
#include "nereus/storage/journal_scan.h"
#include "nereus/storage/segment_scan.h"
#include "nereus/storage/stream_store.h"
#include "nereus/storage/verify.h"

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <memory>
#include <span>
#include <string>
#include <vector>

namespace {

using namespace nereus;
using namespace nereus::storage;
namespace fmt = nereus::storage::format;
using bytes = std::vector<std::byte>;

void check(bool ok) {
    if (!ok) {
        std::abort();
    }
}

struct input_reader {
    std::span<const std::byte> rest;
    bool next_chunk(std::span<const std::byte>& payload, std::uint8_t& tweak) {
        if (rest.size() < 2) {
            return false;
        }
        const auto len = static_cast<std::size_t>(rest[0]);
        if (rest.size() < 2 + len) {
            return false;
        }
        payload = rest.subspan(1, len);
        tweak = static_cast<std::uint8_t>(rest[1 + len]);
        rest = rest.subspan(2 + len);
        return true;
    }
};

void append_record(bytes& out, std::span<const std::byte> payload, std::uint64_t offset) {
    const std::size_t at = out.size();
    out.resize(at + fmt::kRecordHeaderSize);
    out.insert(out.end(), payload.begin(), payload.end());
    fmt::finish_record_header(out.data() + at, crc32c::value(payload),
                              static_cast<std::uint32_t>(payload.size()), offset);
}

bytes repaired_segment(std::span<const std::byte> in) {
    bytes out;
    input_reader r{in};
    std::span<const std::byte> payload;
    std::uint8_t tweak = 0;
    std::uint64_t offset = 0;
    while (r.next_chunk(payload, tweak)) {
        append_record(out, payload, offset + ((tweak & 1U) != 0 ? tweak : 0U));
        ++offset;
    }
    out.insert(out.end(), r.rest.begin(), r.rest.end());
    return out;
}

// Blocks of one record each for stream 1 (offsets 0, 1, ...).
bytes repaired_journal(std::span<const std::byte> in, std::uint64_t stream) {
    bytes out;
    input_reader r{in};
    std::span<const std::byte> payload;
    std::uint8_t tweak = 0;
    std::uint64_t seq = 1;
    std::uint64_t offset = 0;
    while (r.next_chunk(payload, tweak)) {
        bytes block(fmt::kBlockHeaderSize);
        block.resize(block.size() + fmt::kJournalRecordPrefix);
        fmt::put_u64(block.data() + fmt::kBlockHeaderSize, stream);
        append_record(block, payload, offset++);
        fmt::finish_block(block, seq, 1);
        seq += (tweak & 2U) != 0 ? 2 : 1;
        out.insert(out.end(), block.begin(), block.end());
    }
    out.insert(out.end(), r.rest.begin(), r.rest.end());
    return out;
}

bytes repaired_checkpoint(std::span<const std::byte> in) {
    bytes out(in.begin(), in.end());
    if (out.size() < 8) {
        out.resize(8);
    }
    fmt::put_u32(out.data(), fmt::kCheckpointMagic);
    fmt::put_u32(out.data() + 4, fmt::kCheckpointVersion);
    const std::uint32_t crc = crc32c::value(out.data(), out.size());
    out.resize(out.size() + 4);
    fmt::put_u32(out.data() + out.size() - 4, crc);
    return out;
}

std::unique_ptr<file> put_file(fault_file_system& fs, const std::string& path, const bytes& b) {
    auto f = fs.open(path, open_mode::create);
    check(f.has_value());
    check((*f)->truncate(0).has_value());
    check((*f)->write_at(0, b).has_value());
    return std::move(*f);
}

void scan_segment_bytes(const bytes& b) {
    fault_file_system fs;
    auto f = put_file(fs, "/seg", b);
    auto s = scan_segment(*f, 0, 64);
    check(s.has_value());
    check(s->file_bytes == b.size());
    check(s->valid_bytes <= s->file_bytes);
    check(s->end_offset == s->records);
    check(!s->clean() || s->valid_bytes == s->file_bytes);
    check(s->records * fmt::kRecordHeaderSize <= s->valid_bytes);
}

void scan_journal_bytes(const bytes& b) {
    fault_file_system fs;
    auto f = put_file(fs, "/j", b);
    std::uint64_t seen = 0;
    auto s = scan_journal_file(*f, 0, 0, [&](std::uint64_t pos, bytes_view block) -> result<void> {
        check(pos + block.size() <= b.size());
        check(fmt::check_block(block) == fmt::defect::none);
        fmt::for_each_block_record(block, [&](std::uint64_t, bytes_view rec) {
            check(rec.size() >= fmt::kRecordHeaderSize);
            check(rec.data() >= block.data() &&
                  rec.data() + rec.size() <= block.data() + block.size());
        });
        ++seen;
        return {};
    });
    check(s.has_value());
    check(s->blocks == seen);
    check(s->end_pos <= s->file_bytes && s->file_bytes == b.size());
    check(s->defect.has_value() || s->zero_tail || s->end_pos == s->file_bytes);
    check(!s->zero_tail || !s->defect.has_value());
}

void decode_checkpoint_bytes(const bytes& b) {
    auto c = fmt::decode_checkpoint(b);
    if (!c) {
        return;
    }
    // A decoded checkpoint re-encodes to the same bytes.
    check(fmt::encode_checkpoint(c->pos, c->marks) == b);
}

void recover_store(const bytes& b, bool journal) {
    auto fs = std::make_shared<fault_file_system>();
    {
        auto s = stream_store::open(fs, "/db");
        check(s.has_value());
        check((*s)->create_stream(stream_id(1)).has_value());
        for (int i = 0; i < 3; ++i) {
            const std::byte p[3] = {std::byte{1}, std::byte(i), std::byte{3}};
            check((*s)->append_sync(stream_id(1), p).has_value());
        }
        check((*s)->close().has_value());
    }
    std::string path;
    if (journal) {
        auto names = fs->list_dir("/db/journal");
        check(names.has_value() && !names->empty());
        path = "/db/journal/" + names->back();
    } else {
        const std::string dir = "/db/streams/" + fmt::stream_dir_name(1);
        auto names = fs->list_dir(dir);
        check(names.has_value() && !names->empty());
        path = dir + "/" + names->front();
    }
    check(put_file(*fs, path, b)->sync().has_value());
    corruption_info info;
    auto s = stream_store::open(fs, "/db", {}, &info);
    if (!s) {
        return;  // a typed error (corrupt_*): what recovery must do with damage it cannot trim
    }
    auto streams = (*s)->list_streams();
    for (auto id : streams) {
        auto si = (*s)->info(id);
        if (!si) {
            continue;
        }
        check(si->first <= si->end);
        offset at = si->first;
        while (at < si->end) {
            auto batch = (*s)->read(id, at, 64, 1 << 20);
            if (!batch || batch->empty()) {
                break;  // a typed read error (corrupt_segment) ends this stream
            }
            check(batch->entries().front().at == at);
            at = batch->next(at);
        }
    }
    static_cast<void>(verify(*fs, "/db"));
    static_cast<void>((*s)->close());
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    if (size == 0 || size > (64U << 10)) {
        return 0;
    }
    const unsigned mode = data[0];
    const std::span<const std::byte> rest(reinterpret_cast<const std::byte*>(data + 1), size - 1);
    const bool repair = (mode & 4U) != 0;
    const bool journal = (mode & 8U) != 0;
    switch (mode & 3U) {
        case 0:
            scan_segment_bytes(repair ? repaired_segment(rest) : bytes(rest.begin(), rest.end()));
            break;
        case 1:
            scan_journal_bytes(repair ? repaired_journal(rest, 1)
                                      : bytes(rest.begin(), rest.end()));
            break;
        case 2:
            decode_checkpoint_bytes(repair ? repaired_checkpoint(rest)
                                           : bytes(rest.begin(), rest.end()));
            break;
        default:
            if (!repair) {
                recover_store(bytes(rest.begin(), rest.end()), journal);
            } else if (journal) {
                recover_store(repaired_journal(rest, 1), true);
            } else {
                recover_store(repaired_segment(rest), false);
            }
            break;
    }
    return 0;
}
