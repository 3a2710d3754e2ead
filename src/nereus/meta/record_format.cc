#include "nereus/meta/record_format.h"

#include "nereus/base/crc32c.h"
#include "nereus/meta/errc.h"

#include <fmt/format.h>

#include <array>
#include <cstring>

namespace nereus::meta::format {
namespace {

void put_le64(char* p, std::uint64_t v) {
    for (int i = 0; i < 8; ++i) {
        p[i] = static_cast<char>((v >> (8 * i)) & 0xff);
    }
}
std::uint64_t get_le64(const char* p) {
    std::uint64_t v = 0;
    for (int i = 0; i < 8; ++i) {
        v |= static_cast<std::uint64_t>(static_cast<unsigned char>(p[i])) << (8 * i);
    }
    return v;
}
void put_le32(char* p, std::uint32_t v) {
    for (int i = 0; i < 4; ++i) {
        p[i] = static_cast<char>((v >> (8 * i)) & 0xff);
    }
}
std::uint32_t get_le32(const char* p) {
    std::uint32_t v = 0;
    for (int i = 0; i < 4; ++i) {
        v |= static_cast<std::uint32_t>(static_cast<unsigned char>(p[i])) << (8 * i);
    }
    return v;
}

// crc32c over byte 0, bytes [5, end) and the key: everything but the crc field itself.
std::uint32_t record_crc(std::string_view raw_key, std::string_view raw) {
    std::uint32_t crc = crc32c::value(raw.data(), 1);
    crc = crc32c::extend(crc, raw.data() + 5, raw.size() - 5);
    return crc32c::extend(crc, raw_key.data(), raw_key.size());
}

}  // namespace

std::string data_key(std::string_view user_key) {
    std::string k;
    k.reserve(data_prefix.size() + user_key.size());
    k.append(data_prefix).append(user_key);
    return k;
}

std::string index_prefix_of(session_id owner) {
    std::string k(index_prefix);
    // Big-endian so that one session's entries are contiguous and ordered by session.
    for (int i = 7; i >= 0; --i) {
        k.push_back(static_cast<char>((raw(owner) >> (8 * i)) & 0xff));
    }
    return k;
}

std::string index_key(session_id owner, std::string_view user_key) {
    std::string k = index_prefix_of(owner);
    k.append(user_key);
    return k;
}

bool parse_index_key(std::string_view raw_key, index_entry& out) {
    if (raw_key.size() < index_prefix.size() + 8 || !raw_key.starts_with(index_prefix)) {
        return false;
    }
    std::uint64_t s = 0;
    for (std::size_t i = 0; i < 8; ++i) {
        s = (s << 8) | static_cast<unsigned char>(raw_key[index_prefix.size() + i]);
    }
    out.owner = session_id{s};
    out.user_key = std::string(raw_key.substr(index_prefix.size() + 8));
    return true;
}

std::string encode_record(std::string_view raw_key, const record& r) {
    std::string out(record_header_size + r.value.size(), '\0');
    out[0] = static_cast<char>(record_format_v1);
    put_le64(out.data() + 5, r.ver);
    put_le64(out.data() + 13, raw(r.owner));
    if (!r.value.empty()) {
        std::memcpy(out.data() + record_header_size, r.value.data(), r.value.size());
    }
    put_le32(out.data() + 1, record_crc(raw_key, out));
    return out;
}

std::string encode_u64(std::string_view raw_key, std::uint64_t value) {
    std::string v(8, '\0');
    put_le64(v.data(), value);
    return encode_record(raw_key, record{.value = std::move(v)});
}

result<record> decode_record(std::string_view raw_key, std::string_view raw, std::string* why) {
    auto corrupt = [&](std::string reason) {
        if (why != nullptr) {
            *why = std::move(reason);
        }
        return nereus::error(errc::corrupt_record);
    };
    if (raw.size() < record_header_size) {
        return corrupt(fmt::format("record too short: {} bytes, header needs {}", raw.size(),
                                   record_header_size));
    }
    const auto fv = static_cast<std::uint8_t>(raw[0]);
    const std::uint32_t stored = get_le32(raw.data() + 1);
    const std::uint32_t actual = record_crc(raw_key, raw);
    // Checksum first: a flipped format byte is damage, not a newer format.
    if (stored != actual) {
        return corrupt(
            fmt::format("crc32c mismatch: stored {:08x}, computed {:08x}", stored, actual));
    }
    if (fv != record_format_v1) {
        // The first five bytes keep this layout in every format version, so a record that
        // passes its checksum but names another version was written by a newer build.
        if (why != nullptr) {
            *why = fmt::format("record format version {} is not supported", fv);
        }
        return nereus::error(errc::incompatible_format);
    }
    record r;
    r.ver = get_le64(raw.data() + 5);
    r.owner = session_id{get_le64(raw.data() + 13)};
    r.value.assign(raw.substr(record_header_size));
    return r;
}

result<std::uint64_t> decode_u64(std::string_view raw_key, std::string_view raw, std::string* why) {
    auto r = decode_record(raw_key, raw, why);
    if (!r) {
        return nereus::error(r.error());
    }
    if (r->value.size() != 8) {
        if (why != nullptr) {
            *why = fmt::format("metadata value has {} bytes, expected 8", r->value.size());
        }
        return nereus::error(errc::corrupt_record);
    }
    return get_le64(r->value.data());
}

std::string printable(std::string_view key) {
    std::string out;
    out.reserve(key.size());
    for (const char ch : key) {
        const auto c = static_cast<unsigned char>(ch);
        if (c >= 0x20 && c < 0x7f && c != '\\') {
            out.push_back(ch);
        } else {
            out += fmt::format("\\x{:02x}", c);
        }
    }
    return out;
}

}  // namespace nereus::meta::format
