# Script mode (cmake -DSOURCE_DIR=... -DOUTPUT=... -P GitCommit.cmake), run at every build:
# writes OUTPUT, a header defining GNNPIPE_GIT_COMMIT as `git rev-parse HEAD` of SOURCE_DIR
# ("-dirty" appended when tracked files differ from it; "" outside a git checkout or without git),
# and touches it only when that text changed, so an unchanged commit rebuilds nothing.
set(commit "")
find_program(GIT_EXECUTABLE git)
if(GIT_EXECUTABLE)
  execute_process(COMMAND ${GIT_EXECUTABLE} -C ${SOURCE_DIR} rev-parse HEAD
                  OUTPUT_VARIABLE commit RESULT_VARIABLE rc OUTPUT_STRIP_TRAILING_WHITESPACE ERROR_QUIET)
  if(NOT rc EQUAL 0)
    set(commit "")
  else()
    execute_process(COMMAND ${GIT_EXECUTABLE} -C ${SOURCE_DIR} status --porcelain --untracked-files=no
                    OUTPUT_VARIABLE changes OUTPUT_STRIP_TRAILING_WHITESPACE ERROR_QUIET)
    if(changes)
      set(commit "${commit}-dirty")
    endif()
  endif()
endif()
file(WRITE ${OUTPUT}.new "#pragma once\n#define GNNPIPE_GIT_COMMIT \"${commit}\"\n")
configure_file(${OUTPUT}.new ${OUTPUT} COPYONLY)  # writes only when the text differs
file(REMOVE ${OUTPUT}.new)
