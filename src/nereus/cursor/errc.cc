#include "nereus/cursor/errc.h"

#include <string>

namespace nereus::cursor {
namespace {

class category final : public std::error_category {
public:
    const char* name() const noexcept override { return "nereus.cursor"; }

    std::string message(int value) const override {
        switch (static_cast<errc>(value)) {
            case errc::success:
                return "success";
            case errc::invalid_argument:
                return "invalid argument";
            case errc::reserved_property:
                return "property key uses the reserved prefix #nereus.internal.";
            case errc::offset_beyond_end:
                return "offset at or beyond the end of the stream";
            case errc::not_admitted:
                return "operation not admitted in the cursor's lifecycle state";
            case errc::cursor_not_found:
                return "cursor not found";
            case errc::cursor_exists:
                return "cursor already exists";
            case errc::cursor_deleted:
                return "cursor was deleted";
            case errc::owner_fenced:
                return "owner session fenced";
            case errc::closed:
                return "cursor handle closed";
            case errc::corrupt_root:
                return "cursor root record is corrupt";
            case errc::corrupt_snapshot:
                return "cursor snapshot is corrupt";
            case errc::corrupt_delta:
                return "cursor delta record is corrupt";
            case errc::snapshot_missing:
                return "cursor snapshot referenced by the root is missing";
            case errc::delta_missing:
                return "cursor delta record referenced by the root is missing";
            case errc::snapshot_mismatch:
                return "cursor snapshot does not match the root's reference";
            case errc::unsupported_format:
                return "cursor record has an unsupported format version";
        }
        return "unknown cursor error " + std::to_string(value);
    }
};

}  // namespace

const std::error_category& error_category() noexcept {
    static const category instance;
    return instance;
}

}  // namespace nereus::cursor
