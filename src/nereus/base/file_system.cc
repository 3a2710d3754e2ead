// file_system's default open_direct(): direct, synchronous writes emulated on open() + sync();
// file's default read_at_nowait(): always would block.

#include "nereus/base/file_system.h"

#include "nereus/base/forwarding_file_system.h"

#include <cerrno>
#include <cstdint>

namespace nereus {
namespace {

bool aligned(std::uint64_t offset, bytes_view d) {
    return offset % kDirectIoAlign == 0 && d.size() % kDirectIoAlign == 0 &&
           reinterpret_cast<std::uintptr_t>(d.data()) % kDirectIoAlign == 0;
}

// Checks the alignment O_DIRECT asks for (EINVAL, as Linux), then writes and syncs: durable
// when a write returns success. A failed sync fails the write (its bytes are then unknown).
class synced_write_file final : public forwarding_file {
public:
    using forwarding_file::forwarding_file;

    result<void> write_at(std::uint64_t offset, bytes_view data) override {
        if (!aligned(offset, data)) {
            return errno_error(EINVAL);
        }
        NEREUS_TRY(inner_->write_at(offset, data));
        return inner_->sync();
    }
    result<void> writev_at(std::uint64_t offset, std::span<const bytes_view> parts) override {
        std::uint64_t at = offset;
        for (const bytes_view p : parts) {
            if (!aligned(at, p)) {
                return errno_error(EINVAL);
            }
            at += p.size();
        }
        NEREUS_TRY(inner_->writev_at(offset, parts));
        return inner_->sync();
    }
};

}  // namespace

result<std::size_t> file::read_at_nowait(std::uint64_t /*offset*/, std::span<std::byte> /*out*/) {
    return error(std::make_error_code(std::errc::operation_would_block));
}

result<void> file::start_writeback(std::uint64_t /*offset*/, std::uint64_t /*len*/) {
    return {};
}

result<void> file::drop_cached(std::uint64_t /*offset*/, std::uint64_t /*len*/) {
    return {};
}

result<std::unique_ptr<file>> file_system::open_direct(const std::string& path) {
    auto f = open(path, open_mode::read_write);
    if (!f) {
        return error(f.error());
    }
    return std::unique_ptr<file>(std::make_unique<synced_write_file>(std::move(*f)));
}

}  // namespace nereus
