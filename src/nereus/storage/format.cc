#include "nereus/storage/format.h"

#include <fmt/format.h>

namespace nereus::storage::format {

const char* to_string(defect d) {
    switch (d) {
        case defect::none:
            return "ok";
        case defect::incomplete:
            return "incomplete (file ends inside it)";
        case defect::bad_magic:
            return "bad magic";
        case defect::bad_length:
            return "bad length";
        case defect::bad_crc:
            return "checksum mismatch";
        case defect::bad_sequence:
            return "unexpected block sequence number";
        case defect::bad_records:
            return "records do not fill the block";
        case defect::bad_offset:
            return "unexpected offset";
    }
    return "?";
}

defect check_block(bytes_view b) {
    if (b.size() < kBlockHeaderSize) {
        return defect::incomplete;
    }
    const block_header h = decode_block_header(b.data());
    if (h.magic != kBlockMagic) {
        return defect::bad_magic;
    }
    if (h.length < kBlockHeaderSize || h.length > kMaxBlockBytes) {
        return defect::bad_length;
    }
    if (b.size() < h.length) {
        return defect::incomplete;
    }
    if (crc32c::value(b.data() + 12, h.length - 12) != h.crc) {
        return defect::bad_crc;
    }
    std::size_t pos = kBlockHeaderSize;
    std::uint32_t n = 0;
    while (pos < h.length) {
        if (h.length - pos < kJournalRecordPrefix + kRecordHeaderSize) {
            return defect::bad_records;
        }
        const std::uint32_t len = get_u32(b.data() + pos + kJournalRecordPrefix + 4);
        if (len > kMaxPayloadBytes ||
            h.length - pos < kJournalRecordPrefix + kRecordHeaderSize + len) {
            return defect::bad_records;
        }
        const std::byte* rec = b.data() + pos + kJournalRecordPrefix;
        if (!record_crc_ok(rec, rec + kRecordHeaderSize, len)) {
            return defect::bad_records;
        }
        pos += kJournalRecordPrefix + kRecordHeaderSize + len;
        ++n;
    }
    return n == h.count ? defect::none : defect::bad_records;
}

std::vector<std::byte> encode_checkpoint(const journal_position& p,
                                         std::span<const stream_mark> marks) {
    std::vector<std::byte> b(kCheckpointHeaderSize + kStreamMarkSize * marks.size() + 4);
    std::byte* q = b.data();
    put_u32(q, kCheckpointMagic);
    put_u32(q + 4, kCheckpointVersion);
    put_u64(q + 8, p.file_seq);
    put_u64(q + 16, p.pos);
    put_u64(q + 24, p.next_block_seq);
    put_u32(q + 32, static_cast<std::uint32_t>(marks.size()));
    put_u32(q + 36, 0);
    q += kCheckpointHeaderSize;
    for (const auto& m : marks) {
        put_u64(q, m.stream);
        put_u64(q + 8, m.base);
        put_u64(q + 16, m.bytes);
        put_u64(q + 24, m.end);
        q += kStreamMarkSize;
    }
    put_u32(q, crc32c::value(b.data(), b.size() - 4));
    return b;
}

std::optional<checkpoint_data> decode_checkpoint(bytes_view b) {
    // [36] must be zero: encode_checkpoint writes zero, so anything else is not a checkpoint
    // this version wrote (found by storage_recovery_fuzz: it decoded, and re-encoded otherwise).
    if (b.size() < kCheckpointHeaderSize + 4 || get_u32(b.data()) != kCheckpointMagic ||
        get_u32(b.data() + 4) != kCheckpointVersion || get_u32(b.data() + 36) != 0) {
        return std::nullopt;
    }
    const std::uint64_t n = get_u32(b.data() + 32);
    if (b.size() != kCheckpointHeaderSize + kStreamMarkSize * n + 4 ||
        crc32c::value(b.data(), b.size() - 4) != get_u32(b.data() + b.size() - 4)) {
        return std::nullopt;
    }
    checkpoint_data d;
    d.pos = {get_u64(b.data() + 8), get_u64(b.data() + 16), get_u64(b.data() + 24)};
    d.marks.reserve(n);
    const std::byte* q = b.data() + kCheckpointHeaderSize;
    for (std::uint64_t i = 0; i < n; ++i, q += kStreamMarkSize) {
        d.marks.push_back({get_u64(q), get_u64(q + 8), get_u64(q + 16), get_u64(q + 24)});
    }
    return d;
}

std::string journal_file_name(std::uint64_t seq) {
    return fmt::format("{:020}.journal", seq);
}
std::string stream_dir_name(std::uint64_t stream) {
    return fmt::format("{:016x}", stream);
}
std::string segment_file_name(std::uint64_t base) {
    return fmt::format("{:020}.log", base);
}

namespace {

std::optional<std::uint64_t> parse_digits(const std::string& s,
                                          std::size_t n,
                                          int base,
                                          const char* suffix) {
    const std::size_t slen = std::char_traits<char>::length(suffix);
    if (s.size() != n + slen || s.compare(n, slen, suffix) != 0) {
        return std::nullopt;
    }
    std::uint64_t v = 0;
    for (std::size_t i = 0; i < n; ++i) {
        const char c = s[i];
        int d = 0;
        if (c >= '0' && c <= '9') {
            d = c - '0';
        } else if (base == 16 && c >= 'a' && c <= 'f') {
            d = c - 'a' + 10;
        } else {
            return std::nullopt;
        }
        if (__builtin_mul_overflow(v, static_cast<std::uint64_t>(base), &v) ||
            __builtin_add_overflow(v, static_cast<std::uint64_t>(d), &v)) {
            return std::nullopt;
        }
    }
    return v;
}

}  // namespace

std::optional<std::uint64_t> parse_journal_file_name(const std::string& name) {
    return parse_digits(name, 20, 10, ".journal");
}
std::optional<std::uint64_t> parse_stream_dir_name(const std::string& name) {
    return parse_digits(name, 16, 16, "");
}
std::optional<std::uint64_t> parse_segment_file_name(const std::string& name) {
    return parse_digits(name, 20, 10, ".log");
}

}  // namespace nereus::storage::format
