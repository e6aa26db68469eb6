#pragma once
// One family of check macros. Each throws the named exception type with the file, the line,
// the failed expression and a message formatted with fmt, e.g.
//   GNNPIPE_CHECK(n > 0, "batch_size must be positive, got {}", n);
//   GNNPIPE_CHECK_AS(ConfigError, hidden > 0, "model.hidden: must be > 0, got {}", hidden);
//   GNNPIPE_THROW(DataError, "{}: truncated after {} bytes", path, got);
// CUDA/cuBLAS/cuSPARSE status checks live in runtime/core/cuda/cuda_check.hpp, which only
// sources under */cuda/ include (public headers never see CUDA headers).
#include <fmt/format.h>

#include "gnnpipe/core/error.hpp"

namespace gnnpipe::core::detail {

template <class E, class... Args>
[[noreturn]] void throw_error(SourceLocation where, fmt::format_string<Args...> format, Args&&... args) {
  throw E(fmt::format(format, std::forward<Args>(args)...), where);
}

}  // namespace gnnpipe::core::detail

#define GNNPIPE_THROW(ErrorType, ...)                                                      \
  ::gnnpipe::core::detail::throw_error<::gnnpipe::core::ErrorType>(                       \
      ::gnnpipe::core::SourceLocation{__FILE__, __LINE__, ""}, __VA_ARGS__)

#define GNNPIPE_CHECK_AS(ErrorType, cond, ...)                                             \
  do {                                                                                     \
    if (!(cond)) [[unlikely]] {                                                            \
      ::gnnpipe::core::detail::throw_error<::gnnpipe::core::ErrorType>(                   \
          ::gnnpipe::core::SourceLocation{__FILE__, __LINE__, #cond}, __VA_ARGS__);        \
    }                                                                                      \
  } while (0)

#define GNNPIPE_CHECK(cond, ...) GNNPIPE_CHECK_AS(Error, cond, __VA_ARGS__)
#define GNNPIPE_CHECK_CONFIG(cond, ...) GNNPIPE_CHECK_AS(ConfigError, cond, __VA_ARGS__)
#define GNNPIPE_CHECK_DATA(cond, ...) GNNPIPE_CHECK_AS(DataError, cond, __VA_ARGS__)
