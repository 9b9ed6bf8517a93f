# Shared by the scripts that build outside projects against an installed gpuml
# (consumer/run_consumer.cmake, examples/run_examples.cmake): `run` fails the test with a
# command's output, and the built library is installed into ${WORK_DIR}/prefix (`prefix`).
file(REMOVE_RECURSE ${WORK_DIR})
set(prefix ${WORK_DIR}/prefix)
macro(run)
  execute_process(COMMAND ${ARGN} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "failed: ${ARGN}\n${out}\n${err}")
  endif()
endmacro()
run(${CMAKE_COMMAND} --install ${BUILD_DIR} --prefix ${prefix})
