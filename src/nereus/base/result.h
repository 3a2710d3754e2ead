#pragma once

// The one result type of Nereus (style R4): a value or a std::error_code.
//
// Every module defines its own `errc` enum (see e.g. storage/errc.h) with a std::error_category,
// so codes from different modules stay distinguishable and printable. System errors from the
// file-system seam are std::error_code(errno, std::system_category()).

#include <tl/expected.hpp>

#include <system_error>

namespace nereus {

template <class T>
using result = tl::expected<T, std::error_code>;

// Builds the error side of a result: `return nereus::error(errc::checksum_mismatch);`
template <class E>
requires std::is_error_code_enum_v<E>
inline tl::unexpected<std::error_code> error(E e) {
    return tl::unexpected<std::error_code>(make_error_code(e));
}
inline tl::unexpected<std::error_code> error(std::error_code ec) {
    return tl::unexpected<std::error_code>(ec);
}
inline tl::unexpected<std::error_code> error(std::errc e) {
    return tl::unexpected<std::error_code>(std::make_error_code(e));
}
// The current errno as an error.
inline tl::unexpected<std::error_code> errno_error(int err) {
    return tl::unexpected<std::error_code>(std::error_code(err, std::system_category()));
}

}  // namespace nereus

// Propagates an error from an expression yielding a result<T>. The `CO_` form is for coroutines.
#define NEREUS_TRY(expr)                                   \
    do {                                                   \
        if (auto nereus_try_r_ = (expr); !nereus_try_r_) { \
            return ::nereus::error(nereus_try_r_.error()); \
        }                                                  \
    } while (false)
#define NEREUS_CO_TRY(expr)                                   \
    do {                                                      \
        if (auto nereus_try_r_ = (expr); !nereus_try_r_) {    \
            co_return ::nereus::error(nereus_try_r_.error()); \
        }                                                     \
    } while (false)
