#include "nereus/proto/errc.h"

#include <string>

namespace nereus::proto {
namespace {

class category final : public std::error_category {
public:
    const char* name() const noexcept override { return "nereus.proto"; }

    std::string message(int ev) const override {
        switch (static_cast<errc>(ev)) {
            case errc::success:
                return "success";
            case errc::frame_too_large:
                return "frame larger than the maximum frame size";
            case errc::frame_too_small:
                return "frame too small to hold a command size";
            case errc::bad_command_size:
                return "command size inconsistent with the frame size";
            case errc::bad_command:
                return "unparsable BaseCommand or missing command type";
            case errc::missing_command_body:
                return "command sub-message missing for its type";
            case errc::checksum_mismatch:
                return "CRC32C checksum mismatch";
            case errc::bad_magic:
                return "bad or unexpected magic number in payload section";
            case errc::truncated_section:
                return "payload section truncated by the frame end";
            case errc::bad_metadata_size:
                return "metadata size inconsistent with the frame size";
            case errc::bad_metadata:
                return "unparsable message metadata";
            case errc::missing_metadata:
                return "payload command without metadata";
            case errc::bad_batch:
                return "malformed batch payload";
            case errc::unsupported_compression:
                return "unsupported compression codec";
            case errc::bad_compressed_payload:
                return "compressed payload does not decompress to its uncompressed_size";
            case errc::uncompressed_too_large:
                return "uncompressed_size above the limit";
            case errc::missing_required_field:
                return "required field not set";
            case errc::unsupported_by_peer:
                return "command not supported by the peer's protocol version";
            case errc::invalid_argument:
                return "invalid argument";
        }
        return "unknown nereus.proto error " + std::to_string(ev);
    }
};

}  // namespace

const std::error_category& proto_category() noexcept {
    static const category instance;
    return instance;
}

}  // namespace nereus::proto
