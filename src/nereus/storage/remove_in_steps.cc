#include "nereus/storage/remove_in_steps.h"

namespace nereus::storage {

result<void> remove_in_steps(file_system& fs, const std::string& path) {
    auto size = fs.file_size(path);
    if (!size) {
        return error(size.error());
    }
    if (*size > kRemoveStepBytes) {
        auto f = fs.open(path, open_mode::read_write);
        if (!f) {
            return error(f.error());
        }
        for (std::uint64_t end = (*size - 1) / kRemoveStepBytes * kRemoveStepBytes; end > 0;
             end -= kRemoveStepBytes) {
            NEREUS_TRY((*f)->truncate(end));
        }
    }
    return fs.remove(path);
}

}  // namespace nereus::storage
