#include "nereus/meta/make_store.h"

#include "nereus/meta/errc.h"
#include "nereus/meta/logger.h"
#include "nereus/meta/memory_store.h"
#include "nereus/meta/rocksdb_store.h"
#include "nereus/meta/zk_store.h"

#include <string>

namespace nereus::meta {

result<std::unique_ptr<store>> make_store(std::string_view url) {
    constexpr std::string_view memory_scheme = "memory:";
    constexpr std::string_view rocksdb_scheme = "rocksdb:";
    if (url == memory_scheme) {
        return std::unique_ptr<store>(memory_store::open());
    }
    if (url.starts_with(rocksdb_scheme) && url.size() > rocksdb_scheme.size()) {
        auto s = rocksdb_store::open(std::string(url.substr(rocksdb_scheme.size())));
        if (!s) {
            return nereus::error(s.error());
        }
        return std::unique_ptr<store>(std::move(*s));
    }
    if (url.starts_with("zk://")) {
        auto options = zk_store::parse_url(url);
        if (!options) {
            NEREUS_LOG(meta_log(), err, "meta: bad zookeeper url '{}' (want zk://host:port/root)",
                       url);
            return nereus::error(options.error());
        }
        auto s = zk_store::open(std::move(*options));
        if (!s) {
            return nereus::error(s.error());
        }
        return std::unique_ptr<store>(std::move(*s));
    }
    NEREUS_LOG(meta_log(), err,
               "meta: unknown store url '{}' (want memory:, rocksdb:<dir> or zk://host:port/root)",
               url);
    return nereus::error(errc::invalid_argument);
}

}  // namespace nereus::meta
