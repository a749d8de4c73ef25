# Runs COMMAND (a |-separated list) and passes when it exits with status RC
# and its standard error matches every |-separated regular expression in
# EXPECT. Used to test the generator driver's command-line errors, where both
# the exit status and the message matter.
string(REPLACE "|" ";" cmd "${COMMAND}")
string(REPLACE "|" ";" expect "${EXPECT}")
execute_process(COMMAND ${cmd} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
if(NOT rc STREQUAL "${RC}")
  message(FATAL_ERROR "expected exit status ${RC}, got ${rc}\nstderr:\n${err}\nstdout:\n${out}")
endif()
foreach(re IN LISTS expect)
  if(NOT err MATCHES "${re}")
    message(FATAL_ERROR "stderr does not match \"${re}\":\n${err}")
  endif()
endforeach()
message(STATUS "exit status ${rc}, message:\n${err}")
