#pragma once
// mpi_check: an MPI call's error code as an Error naming the call and MPI's own text. (Files that
// include this are compiled with MPI: GNNPIPE_WITH_MPI.)
#include <mpi.h>

#include <cstddef>
#include <string>

#include "gnnpipe/core/check.hpp"

namespace gnnpipe::experiments {

inline void mpi_check(int rc, const char* call) {
  if (rc == MPI_SUCCESS) return;
  char text[MPI_MAX_ERROR_STRING];
  int length = 0;
  MPI_Error_string(rc, text, &length);
  GNNPIPE_THROW(Error, "{}: {}", call, std::string(text, static_cast<std::size_t>(length)));
}

}  // namespace gnnpipe::experiments
