#include "nereus/meta/errc.h"

#include <string>

namespace nereus::meta {
namespace {

class category final : public std::error_category {
public:
    const char* name() const noexcept override { return "nereus.meta"; }

    std::string message(int ev) const override {
        switch (static_cast<errc>(ev)) {
            case errc::success:
                return "success";
            case errc::invalid_argument:
                return "invalid argument";
            case errc::corrupt_record:
                return "corrupt metadata record";
            case errc::io_error:
                return "metadata store I/O error";
            case errc::unknown_outcome:
                return "unknown outcome: the write may or may not have been applied; re-read";
            case errc::unavailable:
                return "metadata store unavailable; nothing was applied";
            case errc::session_expired:
                return "session expired, closed or unknown";
            case errc::closed:
                return "metadata store closed";
            case errc::store_failed:
                return "metadata store failed after a write error; reopen it";
            case errc::incompatible_format:
                return "incompatible metadata store format version";
        }
        return "unknown nereus.meta error " + std::to_string(ev);
    }
};

}  // namespace

const std::error_category& error_category() noexcept {
    static const category instance;
    return instance;
}

}  // namespace nereus::meta
