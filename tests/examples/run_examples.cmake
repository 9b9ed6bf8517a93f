# Installs the built library into a scratch prefix, builds the embedding examples
# (examples/cpp_service and examples/c) and this test's harness against it with
# find_package(gpuml), makes a model and rows (with bad ones), runs both classifiers and checks
# their output: every good row classified right, every bad row reported by its line number.
include(${CMAKE_CURRENT_LIST_DIR}/../install_prefix.cmake)
foreach(project cpp_service c)
  run(${CMAKE_COMMAND} -S ${EXAMPLES_DIR}/${project} -B ${WORK_DIR}/${project} -G ${GENERATOR}
      -DCMAKE_PREFIX_PATH=${prefix} -DCMAKE_BUILD_TYPE=Release)
  run(${CMAKE_COMMAND} --build ${WORK_DIR}/${project})
endforeach()
run(${CMAKE_COMMAND} -S ${SOURCE_DIR} -B ${WORK_DIR}/check -G ${GENERATOR} -DCMAKE_PREFIX_PATH=${prefix} -DCMAKE_BUILD_TYPE=Release)
run(${CMAKE_COMMAND} --build ${WORK_DIR}/check)
run(${WORK_DIR}/check/examples_check make ${WORK_DIR})
foreach(program "cpp_service/classify;${WORK_DIR}/model.gpuml;--threads;4;--device;cpu;${WORK_DIR}/rows.csv"
                "c/classify_c;${WORK_DIR}/model.gpuml;${WORK_DIR}/rows.csv;cpu")
  list(GET program 0 name)
  list(REMOVE_AT program 0)
  execute_process(COMMAND ${WORK_DIR}/${name} ${program} RESULT_VARIABLE rc
                  OUTPUT_FILE ${WORK_DIR}/output.csv ERROR_VARIABLE err)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "${name} failed (${rc}): ${err}")
  endif()
  foreach(line 1 12 22)  # the header, the short row and the non-number
    if(NOT err MATCHES "line ${line} skipped")
      message(FATAL_ERROR "${name} did not report line ${line}:\n${err}")
    endif()
  endforeach()
  run(${WORK_DIR}/check/examples_check check ${WORK_DIR} ${WORK_DIR}/output.csv)
  message(STATUS "${name}: ${out}${err}")
endforeach()
