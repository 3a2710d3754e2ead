#include "nereus/runtime/pulsar/pattern.h"

#include "nereus/client/pattern.h"
#include "nereus/runtime/errc.h"

namespace nereus::runtime::pulsar {

// The client resolves patterns (and re-lists them while a subscription runs); these are its
// functions with the runtime's error for a bad spec.

result<std::string> pattern_namespace(std::string_view pattern) {
    auto r = nereus::client::pattern_namespace(pattern);
    if (!r)
        return error(errc::invalid_spec);
    return r;
}

result<std::vector<std::string>> matching_topics(std::string_view pattern,
                                                 const std::vector<std::string>& listed) {
    auto r = nereus::client::matching_topics(pattern, listed);
    if (!r)
        return error(errc::invalid_spec);
    return r;
}

}  // namespace nereus::runtime::pulsar
