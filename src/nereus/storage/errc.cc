#include "nereus/storage/errc.h"

#include <string>

namespace nereus::storage {
namespace {

class category final : public std::error_category {
public:
    const char* name() const noexcept override { return "nereus.storage"; }
    std::string message(int ev) const override {
        switch (static_cast<errc>(ev)) {
            case errc::success:
                return "success";
            case errc::unknown_stream:
                return "unknown stream";
            case errc::stream_exists:
                return "stream already exists";
            case errc::trimmed:
                return "offset was trimmed";
            case errc::corrupt_segment:
                return "segment file is corrupt";
            case errc::corrupt_journal:
                return "journal is corrupt";
            case errc::corrupt_checkpoint:
                return "checkpoint file is corrupt";
            case errc::store_failed:
                return "store failed after an I/O error; reopen to recover";
            case errc::closed:
                return "store is closed";
            case errc::record_too_large:
                return "record too large";
            case errc::invalid_argument:
                return "invalid argument";
            case errc::would_block:
                return "read would block";
        }
        return "unknown storage error " + std::to_string(ev);
    }
    // would_block is operation_would_block to code outside storage (the broker, which sees
    // neither this enum nor the file layer's code, tests for that condition).
    std::error_condition default_error_condition(int ev) const noexcept override {
        if (static_cast<errc>(ev) == errc::would_block) {
            return std::errc::operation_would_block;
        }
        return {ev, *this};
    }
};

}  // namespace

const std::error_category& storage_category() noexcept {
    static const category c;
    return c;
}

}  // namespace nereus::storage
