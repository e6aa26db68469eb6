# gnnpipe_target_defaults(<target>): C++20, warnings and the sanitizer for OUR targets only
# (no global flags, so third-party code is compiled as its packagers intended).
function(gnnpipe_target_defaults target)
  target_compile_features(${target} PUBLIC cxx_std_20)
  set_target_properties(${target} PROPERTIES CXX_EXTENSIONS OFF POSITION_INDEPENDENT_CODE ON)
  target_compile_options(${target} PRIVATE
    $<$<COMPILE_LANGUAGE:CXX>:-Wall -Wextra -Wpedantic -Wshadow -Wnon-virtual-dtor -Wcast-align
                              -Woverloaded-virtual -Wimplicit-fallthrough>
    $<$<AND:$<COMPILE_LANGUAGE:CXX>,$<BOOL:${GNNPIPE_WERROR}>>:-Werror>
    $<$<COMPILE_LANGUAGE:CUDA>:-std=c++20 -Xcompiler=-Wall,-Wextra --expt-relaxed-constexpr>
    $<$<AND:$<COMPILE_LANGUAGE:CUDA>,$<BOOL:${GNNPIPE_WERROR}>>:-Werror=all-warnings>)
  if(GNNPIPE_FUZZ)
    # Coverage feedback for libFuzzer in every library the fuzz targets link (the targets add
    # -fsanitize=fuzzer themselves, which brings libFuzzer's main), plus ASan and UBSan; UBSan
    # reports abort so that libFuzzer records them as crashes.
    target_compile_options(${target} PRIVATE
      $<$<COMPILE_LANGUAGE:CXX>:-fsanitize=fuzzer-no-link,address,undefined -fno-sanitize-recover=undefined
                                -fno-omit-frame-pointer>)
    target_link_options(${target} PUBLIC -fsanitize=address,undefined)
  endif()
  if(GNNPIPE_SANITIZE)
    if(NOT GNNPIPE_SANITIZE MATCHES "^(address|undefined|address,undefined|thread)$")
      message(FATAL_ERROR
              "GNNPIPE_SANITIZE must be address, undefined, address,undefined or thread, not '${GNNPIPE_SANITIZE}'")
    endif()
    target_compile_options(${target} PRIVATE
      $<$<COMPILE_LANGUAGE:CXX>:-fsanitize=${GNNPIPE_SANITIZE} -fno-omit-frame-pointer>)
    target_link_options(${target} PUBLIC -fsanitize=${GNNPIPE_SANITIZE})
    if(GNNPIPE_SANITIZE MATCHES "undefined")
      # The vptr check reports oneTBB 2021.8's own header code in every flow-graph node:
      # graph_task::destruct_and_deallocate runs ~graph_task() and then static_casts `this` to the
      # derived task type (_flow_graph_impl.h:368). GCC's UBSan runtime cannot suppress a vptr
      # report by type or file, so the check is off; every other UBSan check stays on.
      target_compile_options(${target} PRIVATE $<$<COMPILE_LANGUAGE:CXX>:-fno-sanitize=vptr>)
    endif()
    if(GNNPIPE_SANITIZE STREQUAL "thread" AND CMAKE_CXX_COMPILER_ID STREQUAL "GNU")
      # GCC 12 with -fsanitize=thread reports a false -Wstringop-overflow ("writing 30 bytes into a
      # region of size 0") where core::Buffer's move assignment is inlined into DeviceArray::ensure
      # (pipeline/layerwise_inference.cpp); the same code is clean in the plain and ASan builds.
      target_compile_options(${target} PRIVATE $<$<COMPILE_LANGUAGE:CXX>:-Wno-stringop-overflow>)
    endif()
  endif()
endfunction()
