# cmake -DTOOL=PATH -DSHELL_NAME=bash -DOUT=FILE -P write-completion.cmake: writes the completion
# script TOOL gives for the shell ("TOOL completion SHELL_NAME") to OUT, and fails the build when
# the tool does (a script half written is never installed).
execute_process(COMMAND ${TOOL} completion ${SHELL_NAME}
                OUTPUT_FILE ${OUT}.tmp
                RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  file(REMOVE ${OUT}.tmp)
  message(FATAL_ERROR "'${TOOL} completion ${SHELL_NAME}' failed: ${rc}")
endif()
file(RENAME ${OUT}.tmp ${OUT})
