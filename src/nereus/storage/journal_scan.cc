#include "nereus/storage/journal_scan.h"

#include <algorithm>
#include <cstring>
#include <string.h>  // memmem
#include <vector>

namespace nereus::storage {
namespace {

constexpr std::size_t kZeroChunk = 1U << 20;

// True if p[0, n) are all zero. OR-accumulates 64-byte strides so the compiler vectorises it.
bool zero_bytes(const std::byte* p, std::size_t n) {
    std::size_t i = 0;
    for (; i + 64 <= n; i += 64) {
        std::uint64_t acc = 0;
        for (std::size_t j = 0; j < 64; j += 8) {
            std::uint64_t w;
            std::memcpy(&w, p + i + j, 8);
            acc |= w;
        }
        if (acc != 0) {
            return false;
        }
    }
    for (; i < n; ++i) {
        if (p[i] != std::byte{0}) {
            return false;
        }
    }
    return true;
}

// Reads exactly n bytes at pos into buf; false if the file ends first.
result<bool> read_exact(file& f, std::uint64_t pos, std::size_t n, std::vector<std::byte>& buf) {
    buf.resize(n);
    std::size_t done = 0;
    while (done < n) {
        auto r = f.read_at(pos + done, std::span<std::byte>(buf.data() + done, n - done));
        if (!r) {
            return error(r.error());
        }
        if (*r == 0) {
            buf.resize(done);
            return false;
        }
        done += *r;
    }
    return true;
}

// True if a valid block (with seq `next_seq` + 1 when next_seq is known) starts anywhere in
// (pos, file_bytes). Only runs on a defect, so reading the rest of the file is acceptable.
result<bool> valid_block_after(file& f,
                               std::uint64_t pos,
                               std::uint64_t file_bytes,
                               std::uint64_t next_seq) {
    if (pos + 1 >= file_bytes) {
        return false;
    }
    std::vector<std::byte> rest;
    auto got = read_exact(f, pos + 1, file_bytes - pos - 1, rest);
    if (!got) {
        return error(got.error());
    }
    std::byte magic[4];
    format::put_u32(magic, format::kBlockMagic);
    for (std::size_t i = 0; i + format::kBlockHeaderSize <= rest.size(); ++i) {
        // memmem skips a prepared file's zero tail (up to 64 MiB) quickly.
        const void* m = memmem(rest.data() + i, rest.size() - i, magic, sizeof magic);
        if (m == nullptr) {
            break;
        }
        i = static_cast<std::size_t>(static_cast<const std::byte*>(m) - rest.data());
        if (i + format::kBlockHeaderSize > rest.size()) {
            break;
        }
        const auto h = format::decode_block_header(rest.data() + i);
        if (h.length < format::kBlockHeaderSize || h.length > rest.size() - i) {
            continue;
        }
        if ((next_seq == 0 || h.seq == next_seq + 1) &&
            format::check_block(bytes_view(rest.data() + i, h.length)) == format::defect::none) {
            return true;
        }
    }
    return false;
}

}  // namespace

result<bool> all_zero(file& f, std::uint64_t pos, std::uint64_t end) {
    if (pos >= end) {
        return true;
    }
    std::vector<std::byte> buf(std::min<std::uint64_t>(kZeroChunk, end - pos));
    while (pos < end) {
        const auto n = static_cast<std::size_t>(std::min<std::uint64_t>(buf.size(), end - pos));
        auto r = f.read_at(pos, std::span<std::byte>(buf.data(), n));
        if (!r) {
            return error(r.error());
        }
        if (*r == 0) {
            return true;  // the file is shorter than `end`
        }
        if (!zero_bytes(buf.data(), *r)) {
            return false;
        }
        pos += *r;
    }
    return true;
}

result<journal_file_scan> scan_journal_file(file& f,
                                            std::uint64_t start,
                                            std::uint64_t expected_seq,
                                            const block_fn& fn,
                                            std::uint64_t limit) {
    auto size = f.size();
    if (!size) {
        return error(size.error());
    }
    journal_file_scan s;
    s.file_bytes = std::min(*size, limit);
    s.end_pos = start;
    s.next_seq = expected_seq;
    std::vector<std::byte> buf;
    std::uint64_t pos = start;
    while (pos < s.file_bytes) {
        journal_defect d{pos, format::defect::none, false};
        auto got = read_exact(
            f, pos, std::min<std::uint64_t>(format::kBlockHeaderSize, s.file_bytes - pos), buf);
        if (!got) {
            return error(got.error());
        }
        if (zero_bytes(buf.data(), buf.size())) {
            // Where the writes stopped in a prepared (zero-filled) file — if everything after
            // is zero too. A zero header with data after it is damage (or a block whose first
            // sectors were lost), handled as any other defect below.
            auto zero = all_zero(f, pos + buf.size(), s.file_bytes);
            if (!zero) {
                return error(zero.error());
            }
            if (*zero) {
                s.zero_tail = true;
                return s;
            }
        }
        if (buf.size() < format::kBlockHeaderSize) {
            d.what = format::defect::incomplete;
        } else {
            const auto h = format::decode_block_header(buf.data());
            if (h.magic != format::kBlockMagic) {
                d.what = format::defect::bad_magic;
            } else if (h.length < format::kBlockHeaderSize || h.length > format::kMaxBlockBytes) {
                d.what = format::defect::bad_length;
            } else if (pos + h.length > s.file_bytes) {
                d.what = format::defect::incomplete;
            } else {
                got = read_exact(f, pos, h.length, buf);
                if (!got) {
                    return error(got.error());
                }
                d.what = *got ? format::check_block(buf) : format::defect::incomplete;
                if (d.what == format::defect::none && s.next_seq != 0 && h.seq != s.next_seq) {
                    d.what = format::defect::bad_sequence;
                }
            }
        }
        if (d.what != format::defect::none) {
            // Does a valid block with the next sequence number come anywhere after it? Searched
            // byte by byte for the magic, so a damaged length field cannot hide later blocks.
            auto found = valid_block_after(f, pos, s.file_bytes, s.next_seq);
            if (!found) {
                return error(found.error());
            }
            d.followed_by_valid = *found;
            // A block with a valid checksum but the wrong sequence is never a torn write.
            if (d.what == format::defect::bad_sequence) {
                d.followed_by_valid = true;
            }
            s.defect = d;
            return s;
        }
        const auto h = format::decode_block_header(buf.data());
        if (fn) {
            auto r = fn(pos, bytes_view(buf.data(), h.length));
            if (!r) {
                return error(r.error());
            }
        }
        pos += h.length;
        s.end_pos = pos;
        s.next_seq = h.seq + 1;
        ++s.blocks;
    }
    return s;
}

}  // namespace nereus::storage
