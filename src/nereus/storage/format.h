#pragma once

// The on-disk format of the stream log: segment records, journal commit blocks, the checkpoint
// file and file names. Byte layout, design and recovery rules: doc/format/segment.md.
//
// All integers are little-endian. CRCs are CRC32C (nereus/base/crc32c.h).
// Thread-safety: thread-safe (pure functions).

#include "nereus/base/crc32c.h"
#include "nereus/base/file_system.h"

#include <array>
#include <bit>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <optional>
#include <span>
#include <string>
#include <vector>

namespace nereus::storage::format {

static_assert(std::endian::native == std::endian::little, "the codecs below assume little-endian");

inline void put_u32(std::byte* p, std::uint32_t v) {
    std::memcpy(p, &v, 4);
}
inline void put_u64(std::byte* p, std::uint64_t v) {
    std::memcpy(p, &v, 8);
}
inline std::uint32_t get_u32(const std::byte* p) {
    std::uint32_t v;
    std::memcpy(&v, p, 4);
    return v;
}
inline std::uint64_t get_u64(const std::byte* p) {
    std::uint64_t v;
    std::memcpy(&v, p, 8);
    return v;
}

// ---- segment record ---------------------------------------------------------------------------
// [0] u32 crc     crc32c(payload) extended over header bytes [4,16) (len, offset)
// [4] u32 len     payload length
// [8] u64 offset  the entry's stream offset
// [16] payload
// The CRC starts with the payload so an appender can checksum it before it knows its offset.
inline constexpr std::size_t kRecordHeaderSize = 16;
inline constexpr std::uint32_t kMaxPayloadBytes = 256U << 20;

struct record_header {
    std::uint32_t crc;
    std::uint32_t len;
    std::uint64_t offset;
};

inline record_header decode_record_header(const std::byte* p) {
    return {get_u32(p), get_u32(p + 4), get_u64(p + 8)};
}
// Fills bytes [4,16) of a header and returns the record's crc given crc32c(payload).
inline std::uint32_t finish_record_header(std::byte* hdr,
                                          std::uint32_t payload_crc,
                                          std::uint32_t len,
                                          std::uint64_t offset) {
    put_u32(hdr + 4, len);
    put_u64(hdr + 8, offset);
    const std::uint32_t crc = crc32c::extend(payload_crc, hdr + 4, 12);
    put_u32(hdr, crc);
    return crc;
}
inline bool record_crc_ok(const std::byte* hdr, const std::byte* payload, std::uint32_t len) {
    return crc32c::extend(crc32c::value(payload, len), hdr + 4, 12) == get_u32(hdr);
}

// ---- journal commit block ---------------------------------------------------------------------
// [0]  u32 magic   kBlockMagic
// [4]  u32 length  whole block, header included
// [8]  u32 crc     crc32c over bytes [12, length)
// [12] u64 seq     block sequence number, +1 per block across all journal files
// [20] u32 count   number of records
// [24] records, each: u64 stream id, then one segment record (header + payload) exactly as it
//      is written to the stream's segment file.
inline constexpr std::uint32_t kBlockMagic = 0x424a524e;  // "NRJB"
inline constexpr std::size_t kBlockHeaderSize = 24;
inline constexpr std::size_t kJournalRecordPrefix = 8;  // the stream id before each record
inline constexpr std::uint64_t kMaxBlockBytes = 1ULL << 31;

struct block_header {
    std::uint32_t magic;
    std::uint32_t length;
    std::uint32_t crc;
    std::uint64_t seq;
    std::uint32_t count;
};

inline block_header decode_block_header(const std::byte* p) {
    return {get_u32(p), get_u32(p + 4), get_u32(p + 8), get_u64(p + 12), get_u32(p + 20)};
}
// Fills the header of a block whose records occupy block[kBlockHeaderSize, block.size()).
inline void finish_block(std::span<std::byte> block, std::uint64_t seq, std::uint32_t count) {
    std::byte* p = block.data();
    put_u32(p, kBlockMagic);
    put_u32(p + 4, static_cast<std::uint32_t>(block.size()));
    put_u64(p + 12, seq);
    put_u32(p + 20, count);
    put_u32(p + 8, crc32c::value(p + 12, block.size() - 12));
}
// The same block header, given records_crc = crc32c over the records, bytes
// [kBlockHeaderSize, block.size()) (an appender folds each record in as it adds it, so the
// committer does not read the block again). The stored CRC is identical to finish_block's.
inline void finish_block(std::span<std::byte> block,
                         std::uint64_t seq,
                         std::uint32_t count,
                         std::uint32_t records_crc) {
    std::byte* p = block.data();
    put_u32(p, kBlockMagic);
    put_u32(p + 4, static_cast<std::uint32_t>(block.size()));
    put_u64(p + 12, seq);
    put_u32(p + 20, count);
    put_u32(p + 8, crc32c::combine(crc32c::value(p + 12, kBlockHeaderSize - 12), records_crc,
                                   block.size() - kBlockHeaderSize));
}

// Why a block or record failed validation.
enum class defect {
    none,
    incomplete,  // fewer bytes than the header or length announce
    bad_magic,
    bad_length,
    bad_crc,
    bad_sequence,  // valid block with an unexpected sequence number
    bad_records,   // records inside a block do not parse to exactly its length
    bad_offset,    // record offset is not the next expected one
};
const char* to_string(defect d);

// Validates the whole block `b` (exactly one block's bytes, or fewer if the file ended): magic,
// length, crc, and that its records parse to exactly its length. Does not check the sequence.
defect check_block(bytes_view b);

// Calls fn(stream_id, record bytes (header+payload)) for each record of a block that passed
// check_block().
template <class Fn>
void for_each_block_record(bytes_view block, Fn&& fn) {
    std::size_t pos = kBlockHeaderSize;
    while (pos < block.size()) {
        const std::uint64_t sid = get_u64(block.data() + pos);
        const std::uint32_t len = get_u32(block.data() + pos + kJournalRecordPrefix + 4);
        const std::size_t rec_len = kRecordHeaderSize + len;
        fn(sid, block.subspan(pos + kJournalRecordPrefix, rec_len));
        pos += kJournalRecordPrefix + rec_len;
    }
}

// ---- checkpoint file --------------------------------------------------------------------------
// [0] u32 magic "NRCK"  [4] u32 version (1)  [8] u64 journal file seq  [16] u64 byte position
// [24] u64 next block seq  [32] u32 stream count n  [36] u32 zero
// [40] n stream marks: u64 stream id, u64 active segment base, u64 its synced bytes, u64 end offset
// [40 + 32n] u32 crc32c over everything before it.
inline constexpr std::uint32_t kCheckpointMagic = 0x4b43524e;  // "NRCK"
inline constexpr std::uint32_t kCheckpointVersion = 1;
inline constexpr std::size_t kCheckpointHeaderSize = 40;
inline constexpr std::size_t kStreamMarkSize = 32;

// A block boundary in the journal: replay starts here.
struct journal_position {
    std::uint64_t file_seq = 0;        // journal file number
    std::uint64_t pos = 0;             // byte position in that file
    std::uint64_t next_block_seq = 0;  // seq of the block at `pos`; 0 = not known (any)
    friend bool operator==(const journal_position&, const journal_position&) = default;
};

// Where a stream's active segment stood at the checkpoint: its first `bytes` bytes (offsets up
// to `end`) are synced, so recovery scans only what follows.
struct stream_mark {
    std::uint64_t stream = 0;
    std::uint64_t base = 0;
    std::uint64_t bytes = 0;
    std::uint64_t end = 0;
    friend bool operator==(const stream_mark&, const stream_mark&) = default;
};

struct checkpoint_data {
    journal_position pos;
    std::vector<stream_mark> marks;
};

std::vector<std::byte> encode_checkpoint(const journal_position& p,
                                         std::span<const stream_mark> marks);
std::optional<checkpoint_data> decode_checkpoint(bytes_view b);

// ---- names ------------------------------------------------------------------------------------
//   <dir>/checkpoint, <dir>/checkpoint.tmp
//   <dir>/journal/<seq, 20 digits>.journal
//   <dir>/journal/spare, <dir>/journal/spare.tmp  (a prepared, zero-filled journal file; being
//                                                 prepared) — never parsed as journal files
//   <dir>/streams/<stream id, 16 hex digits>/<base offset, 20 digits>.log
//   <dir>/streams/<stream id>/DELETED   (tombstone while a stream is being deleted)
//   <dir>/streams/<stream id>.creating  (a stream being created; renamed into place when done)
inline constexpr const char* kCheckpointName = "checkpoint";
inline constexpr const char* kCheckpointTmpName = "checkpoint.tmp";
inline constexpr const char* kJournalDirName = "journal";
inline constexpr const char* kSpareJournalName = "spare";
inline constexpr const char* kSpareJournalTmpName = "spare.tmp";
inline constexpr const char* kStreamsDirName = "streams";
inline constexpr const char* kTombstoneName = "DELETED";
// A segment removed by a trim is renamed `<name>.trimmed` (the rename made durable), then cut
// and unlinked: a file with this suffix is garbage, removed at open.
inline constexpr const char* kTrimmedSuffix = ".trimmed";
inline constexpr const char* kCreatingSuffix = ".creating";  // a stream dir being created

std::string journal_file_name(std::uint64_t seq);
std::string stream_dir_name(std::uint64_t stream);
std::string segment_file_name(std::uint64_t base);
std::optional<std::uint64_t> parse_journal_file_name(const std::string& name);
std::optional<std::uint64_t> parse_stream_dir_name(const std::string& name);
std::optional<std::uint64_t> parse_segment_file_name(const std::string& name);

}  // namespace nereus::storage::format
