#pragma once

// NEREUS_ASSERT(cond, "fmt {}", args...): invariant check that logs file:line and aborts.
// For programming errors only; recoverable failures are result<T> values (style R4).

#include <fmt/format.h>

#include <cstdio>
#include <cstdlib>

#define NEREUS_ASSERT(cond, ...)                                                                   \
    do {                                                                                           \
        if (!(cond)) [[unlikely]] {                                                                \
            std::fprintf(stderr, "assertion failed at %s:%d: %s: %s\n", __FILE__, __LINE__, #cond, \
                         ::fmt::format(__VA_ARGS__).c_str());                                      \
            std::abort();                                                                          \
        }                                                                                          \
    } while (false)
