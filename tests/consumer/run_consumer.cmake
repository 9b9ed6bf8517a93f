# Installs the built library into a scratch prefix, then configures, builds and runs the
# consumer project against it with find_package(gpuml).
include(${CMAKE_CURRENT_LIST_DIR}/../install_prefix.cmake)
run(${CMAKE_COMMAND} -S ${SOURCE_DIR} -B ${WORK_DIR}/build -G ${GENERATOR} -DCMAKE_PREFIX_PATH=${prefix} -DCMAKE_BUILD_TYPE=Release)
run(${CMAKE_COMMAND} --build ${WORK_DIR}/build)
run(${WORK_DIR}/build/consumer_cpp)
run(${WORK_DIR}/build/consumer_c)
message(STATUS "consumer project built and ran against ${prefix}")
