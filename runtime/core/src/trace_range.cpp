#include "gnnpipe/core/trace_range.hpp"

#include "backend.hpp"

namespace gnnpipe::core {

TraceRange::TraceRange(const char* name) noexcept { backend::range_push(name); }
TraceRange::~TraceRange() { backend::range_pop(); }

}  // namespace gnnpipe::core
