#include "nereus/proto/compression.h"

#include "nereus/proto/errc.h"

#include <limits>
#include <lz4.h>
#include <snappy-c.h>
#include <zlib.h>
#include <zstd.h>

namespace nereus::proto {

namespace {

char* chars(std::vector<std::byte>& v) {
    return reinterpret_cast<char*>(v.data());
}
const char* chars(std::span<const std::byte> s) {
    return reinterpret_cast<const char*>(s.data());
}

// zlib's one-shot API takes uLong sizes; both directions are bounded far below that.
bool zlib_fits(std::size_t n) {
    return n <= std::numeric_limits<uLong>::max();
}

}  // namespace

bool compression_supported(compression c) noexcept {
    switch (c) {
        case compression::none:
        case compression::lz4:
        case compression::zlib:
        case compression::zstd:
        case compression::snappy:
            return true;
    }
    return false;
}

result<std::span<const std::byte>> decompress(compression c,
                                              std::span<const std::byte> input,
                                              std::uint32_t uncompressed_size,
                                              std::vector<std::byte>& scratch) {
    if (c == compression::none) {
        return input;
    }
    if (!compression_supported(c)) {
        return error(errc::unsupported_compression);
    }
    if (uncompressed_size > max_uncompressed_size) {
        return error(errc::uncompressed_too_large);
    }
    scratch.resize(uncompressed_size);
    bool ok = false;
    switch (c) {
        case compression::lz4: {
            if (input.size() > static_cast<std::size_t>(std::numeric_limits<int>::max())) {
                break;
            }
            const int n =
                LZ4_decompress_safe(chars(input), chars(scratch), static_cast<int>(input.size()),
                                    static_cast<int>(uncompressed_size));
            ok = n >= 0 && static_cast<std::uint32_t>(n) == uncompressed_size;
            break;
        }
        case compression::zlib: {
            if (!zlib_fits(input.size())) {
                break;
            }
            uLongf out_len = uncompressed_size;
            // A zero-length destination is legal for zlib only with a non-null pointer.
            Bytef dummy = 0;
            Bytef* out = uncompressed_size == 0 ? &dummy : reinterpret_cast<Bytef*>(scratch.data());
            const int rc = ::uncompress(out, &out_len, reinterpret_cast<const Bytef*>(input.data()),
                                        static_cast<uLong>(input.size()));
            ok = rc == Z_OK && out_len == uncompressed_size;
            break;
        }
        case compression::zstd: {
            const unsigned long long declared =
                ZSTD_getFrameContentSize(input.data(), input.size());
            if (declared != ZSTD_CONTENTSIZE_UNKNOWN && declared != uncompressed_size) {
                break;
            }
            const std::size_t n =
                ZSTD_decompress(scratch.data(), scratch.size(), input.data(), input.size());
            ok = ZSTD_isError(n) == 0 && n == uncompressed_size;
            break;
        }
        case compression::snappy: {
            std::size_t declared = 0;
            if (snappy_uncompressed_length(chars(input), input.size(), &declared) != SNAPPY_OK ||
                declared != uncompressed_size) {
                break;
            }
            std::size_t out_len = uncompressed_size;
            ok = snappy_uncompress(chars(input), input.size(), chars(scratch), &out_len) ==
                     SNAPPY_OK &&
                 out_len == uncompressed_size;
            break;
        }
        case compression::none:
            break;
    }
    if (!ok) {
        return error(errc::bad_compressed_payload);
    }
    return std::span<const std::byte>(scratch.data(), uncompressed_size);
}

result<std::span<const std::byte>> compress(compression c,
                                            std::span<const std::byte> input,
                                            std::vector<std::byte>& scratch) {
    if (c == compression::none) {
        return input;
    }
    if (!compression_supported(c)) {
        return error(errc::unsupported_compression);
    }
    if (input.size() > max_uncompressed_size) {
        return error(errc::uncompressed_too_large);
    }
    std::size_t out_len = 0;
    switch (c) {
        case compression::lz4: {
            const int bound = LZ4_compressBound(static_cast<int>(input.size()));
            scratch.resize(static_cast<std::size_t>(bound));
            const int n = LZ4_compress_default(chars(input), chars(scratch),
                                               static_cast<int>(input.size()), bound);
            if (n <= 0) {
                return error(errc::invalid_argument);
            }
            out_len = static_cast<std::size_t>(n);
            break;
        }
        case compression::zlib: {
            uLongf n = ::compressBound(static_cast<uLong>(input.size()));
            scratch.resize(n);
            if (::compress(reinterpret_cast<Bytef*>(scratch.data()), &n,
                           reinterpret_cast<const Bytef*>(input.data()),
                           static_cast<uLong>(input.size())) != Z_OK) {
                return error(errc::invalid_argument);
            }
            out_len = n;
            break;
        }
        case compression::zstd: {
            scratch.resize(ZSTD_compressBound(input.size()));
            const std::size_t n = ZSTD_compress(scratch.data(), scratch.size(), input.data(),
                                                input.size(), ZSTD_CLEVEL_DEFAULT);
            if (ZSTD_isError(n) != 0) {
                return error(errc::invalid_argument);
            }
            out_len = n;
            break;
        }
        case compression::snappy: {
            std::size_t n = snappy_max_compressed_length(input.size());
            scratch.resize(n);
            if (snappy_compress(chars(input), input.size(), chars(scratch), &n) != SNAPPY_OK) {
                return error(errc::invalid_argument);
            }
            out_len = n;
            break;
        }
        case compression::none:
            break;
    }
    return std::span<const std::byte>(scratch.data(), out_len);
}

}  // namespace nereus::proto
