#include "stage_failure.hpp"

#include "gnnpipe/core/error.hpp"

namespace gnnpipe::pipeline::detail {
namespace {

template <class E>
std::exception_ptr prefixed(const E& e, const std::string& context) {
  return std::make_exception_ptr(E(context + e.message(), core::SourceLocation{e.file(), e.line(), e.expression()}));
}

}  // namespace

std::exception_ptr with_context(std::exception_ptr error, const std::string& context) {
  try {
    std::rethrow_exception(error);
  } catch (const core::ConfigError& e) {
    return prefixed(e, context);
  } catch (const core::DataError& e) {
    return prefixed(e, context);
  } catch (const core::OutOfBudget& e) {
    return prefixed(e, context);
  } catch (const core::CudaError& e) {
    return prefixed(e, context);
  } catch (const core::Interrupted& e) {
    return prefixed(e, context);
  } catch (const core::Error& e) {
    return prefixed(e, context);
  } catch (const std::exception& e) {
    return std::make_exception_ptr(core::Error(context + e.what(), core::SourceLocation{__FILE__, __LINE__, ""}));
  } catch (...) {
    return std::make_exception_ptr(core::Error(context + "unknown exception", core::SourceLocation{__FILE__, __LINE__, ""}));
  }
}

bool may_succeed_again(std::exception_ptr error) {
  try {
    std::rethrow_exception(error);
  } catch (const core::ConfigError&) {
    return false;
  } catch (const core::DataError&) {
    return false;
  } catch (const core::CudaError&) {
    return false;
  } catch (const core::OutOfBudget&) {
    return false;
  } catch (const core::Interrupted&) {
    return false;
  } catch (...) {
    return true;
  }
}

}  // namespace gnnpipe::pipeline::detail
