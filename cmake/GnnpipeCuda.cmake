# Decides GNNPIPE_WITH_CUDA from GNNPIPE_CUDA (AUTO | ON | OFF) and, when on, enables the CUDA
# language for the explicit architectures in GNNPIPE_CUDA_ARCHS. `native` is never used: it
# fails on machines without a GPU, where CI still compiles every .cu file.
set(GNNPIPE_WITH_CUDA OFF)
if(NOT GNNPIPE_CUDA MATCHES "^(AUTO|ON|OFF)$")
  message(FATAL_ERROR "GNNPIPE_CUDA must be AUTO, ON or OFF, not '${GNNPIPE_CUDA}'")
endif()
if(NOT GNNPIPE_CUDA STREQUAL "OFF")
  include(CheckLanguage)
  check_language(CUDA)
  if(CMAKE_CUDA_COMPILER)
    set(GNNPIPE_WITH_CUDA ON)
  elseif(GNNPIPE_CUDA STREQUAL "ON")
    message(FATAL_ERROR "GNNPIPE_CUDA=ON but no CUDA compiler (nvcc) was found; "
                        "install the CUDA toolkit or set CMAKE_CUDA_COMPILER")
  else()
    message(STATUS "nvcc not found: building the CPU backend only")
  endif()
endif()

if(GNNPIPE_WITH_CUDA)
  set(CMAKE_CUDA_ARCHITECTURES "${GNNPIPE_CUDA_ARCHS}")
  # One CUDA runtime: the shared libcudart that cuBLAS and cuSPARSE use too (CMake's default for
  # nvcc-linked targets is the static one, which put both on the link line).
  set(CMAKE_CUDA_RUNTIME_LIBRARY Shared)
  enable_language(CUDA)
  find_package(CUDAToolkit REQUIRED)
endif()
