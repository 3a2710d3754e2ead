#include "nereus/objects/errc.h"

namespace nereus::objects {
namespace {

class category final : public std::error_category {
public:
    const char* name() const noexcept override { return "nereus.objects"; }

    std::string message(int value) const override {
        switch (static_cast<errc>(value)) {
            case errc::success:
                return "success";
            case errc::not_found:
                return "object not found";
            case errc::corrupt_object:
                return "object is corrupt";
            case errc::invalid_name:
                return "invalid object name";
            case errc::unsupported_version:
                return "object has an unsupported format version";
            case errc::object_too_large:
                return "object is too large";
        }
        return "unknown objects error " + std::to_string(value);
    }
};

}  // namespace

const std::error_category& objects_category() noexcept {
    static const category instance;
    return instance;
}

}  // namespace nereus::objects
