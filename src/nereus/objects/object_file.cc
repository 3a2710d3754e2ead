#include "nereus/objects/object_file.h"

#include "nereus/base/crc32c.h"
#include "nereus/objects/object_format.h"

#include <fmt/format.h>

#include <array>
#include <span>

namespace nereus::objects {
namespace {

// A successful read whose verdict is "corrupt".
result<checked_object> corrupt(corruption_reason reason, std::string detail) {
    return checked_object(tl::unexpect, corruption{reason, std::move(detail)});
}

// Reads exactly out.size() bytes at `offset`; returns the count actually read (smaller only
// when the file ends first).
result<std::size_t> read_full(file& f, std::uint64_t offset, std::span<std::byte> out) {
    std::size_t done = 0;
    while (done < out.size()) {
        auto n = f.read_at(offset + done, out.subspan(done));
        if (!n) {
            return error(n.error());
        }
        if (*n == 0) {
            break;
        }
        done += *n;
    }
    return done;
}

}  // namespace

const char* to_string(corruption_reason reason) {
    switch (reason) {
        case corruption_reason::truncated:
            return "truncated";
        case corruption_reason::trailing_bytes:
            return "trailing_bytes";
        case corruption_reason::bad_magic:
            return "bad_magic";
        case corruption_reason::header_checksum_mismatch:
            return "header_checksum_mismatch";
        case corruption_reason::unsupported_version:
            return "unsupported_version";
        case corruption_reason::reserved_nonzero:
            return "reserved_nonzero";
        case corruption_reason::name_mismatch:
            return "name_mismatch";
        case corruption_reason::too_large:
            return "too_large";
        case corruption_reason::payload_checksum_mismatch:
            return "payload_checksum_mismatch";
        case corruption_reason::invalid_file_name:
            return "invalid_file_name";
        case corruption_reason::not_a_file:
            return "not_a_file";
    }
    return "unknown";
}

result<void> write_object_file(file& out, std::string_view name, bytes_view payload) {
    const auto header = encode_object_header(name, payload.size(), crc32c::value(payload));
    const std::array<bytes_view, 3> parts = {
        bytes_view(header), std::as_bytes(std::span<const char>(name.data(), name.size())),
        payload};
    NEREUS_TRY(out.writev_at(0, parts));
    return out.sync();
}

result<checked_object> read_object_file(file_system& fs,
                                        const std::string& path,
                                        std::string_view name) {
    // A directory where an object file should be is a damaged store, not an I/O failure.
    // (POSIX opens a directory read-only and fails the read; fault_file_system fails the open.)
    const auto not_a_file = [] {
        return corrupt(corruption_reason::not_a_file, "a directory, not an object file");
    };
    auto opened = fs.open(path, open_mode::read_only);
    if (!opened) {
        if (opened.error() == std::errc::is_a_directory) {
            return not_a_file();
        }
        return error(opened.error());
    }
    file& f = **opened;
    auto size = f.size();
    if (!size) {
        return error(size.error());
    }
    const std::uint64_t file_size = *size;

    object_header_bytes raw{};
    auto got = read_full(f, 0, raw);
    if (!got) {
        if (got.error() == std::errc::is_a_directory) {
            return not_a_file();
        }
        return error(got.error());
    }
    // Check order: the magic first (is this an object file at all?), then the header checksum
    // (are the lengths trustworthy?), then everything the header claims.
    if (*got < object_header_size) {
        return corrupt(
            corruption_reason::truncated,
            fmt::format("file has {} bytes, the header needs {}", file_size, object_header_size));
    }
    if (!has_object_magic(raw)) {
        return corrupt(corruption_reason::bad_magic, "file does not start with \"NROB\"");
    }
    const auto header = decode_object_header(raw);
    std::string stored_name(header.name_length, '\0');
    auto name_bytes = std::as_writable_bytes(std::span<char>(stored_name));
    got = read_full(f, object_header_size, name_bytes);
    if (!got) {
        return error(got.error());
    }
    if (*got < header.name_length) {
        return corrupt(corruption_reason::truncated,
                       fmt::format("file has {} bytes, header and name need {}", file_size,
                                   object_header_size + header.name_length));
    }
    const auto header_crc = object_header_crc(raw, name_bytes);
    if (header_crc != header.header_crc) {
        return corrupt(corruption_reason::header_checksum_mismatch,
                       fmt::format("header crc32c stored {:#010x}, computed {:#010x}",
                                   header.header_crc, header_crc));
    }
    if (header.format_version != object_format_version) {
        return corrupt(corruption_reason::unsupported_version,
                       fmt::format("format version {}, this build reads {}", header.format_version,
                                   object_format_version));
    }
    if (header.reserved != 0) {
        return corrupt(corruption_reason::reserved_nonzero,
                       fmt::format("reserved bytes {:#018x}", header.reserved));
    }
    if (stored_name != name) {
        return corrupt(corruption_reason::name_mismatch,
                       fmt::format("file holds object \"{}\"", stored_name));
    }
    if (header.payload_length > max_object_size) {
        return corrupt(corruption_reason::too_large,
                       fmt::format("header claims {} payload bytes, the limit is {}",
                                   header.payload_length, max_object_size));
    }
    const std::uint64_t expected_size =
        object_header_size + header.name_length + header.payload_length;
    if (file_size < expected_size) {
        return corrupt(corruption_reason::truncated,
                       fmt::format("file has {} bytes, header says {}", file_size, expected_size));
    }
    if (file_size > expected_size) {
        return corrupt(corruption_reason::trailing_bytes,
                       fmt::format("file has {} bytes, header says {}", file_size, expected_size));
    }

    object result_object;
    result_object.bytes.resize(header.payload_length);
    got = read_full(f, object_header_size + header.name_length, result_object.bytes);
    if (!got) {
        return error(got.error());
    }
    if (*got < header.payload_length) {
        // The file shrank while we read it; nothing of ours truncates object files.
        return corrupt(
            corruption_reason::truncated,
            fmt::format("read {} payload bytes, header says {}", *got, header.payload_length));
    }
    result_object.checksum = crc32c::value(result_object.bytes);
    if (result_object.checksum != header.payload_crc) {
        return corrupt(corruption_reason::payload_checksum_mismatch,
                       fmt::format("payload crc32c stored {:#010x}, computed {:#010x}",
                                   header.payload_crc, result_object.checksum));
    }
    return checked_object(std::move(result_object));
}

}  // namespace nereus::objects
