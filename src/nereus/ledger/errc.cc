#include "nereus/ledger/errc.h"

#include <string>

namespace nereus::ledger {
namespace {

class category final : public std::error_category {
public:
    const char* name() const noexcept override { return "nereus.ledger"; }

    std::string message(int value) const override {
        switch (static_cast<errc>(value)) {
            case errc::success:
                return "success";
            case errc::invalid_argument:
                return "invalid argument";
            case errc::unsupported:
                return "unsupported semantics (transactions, replicated subscriptions, delayed "
                       "delivery)";
            case errc::not_admitted:
                return "operation not admitted by the ledger's capabilities or lifecycle state";
            case errc::owned_elsewhere:
                return "the topic's retention root is claimed by another owner session";
            case errc::owner_fenced:
                return "the ledger's owner session was fenced";
            case errc::closed:
                return "ledger or cursor closed";
            case errc::topic_not_found:
                return "topic not found";
            case errc::cursor_exists:
                return "cursor already exists";
            case errc::cursor_not_found:
                return "cursor not found";
            case errc::stream_missing:
                return "the registered stream is missing from the stream log";
            case errc::corrupt_record:
                return "ledger metadata record is corrupt";
            case errc::unsupported_format:
                return "ledger metadata record has an unsupported format version";
            case errc::injected_crash:
                return "injected crash (test fault hook)";
        }
        return "unknown ledger error";
    }
};

}  // namespace

const std::error_category& error_category() noexcept {
    static const category c;
    return c;
}

}  // namespace nereus::ledger
