# Installs the Loom build BUILD_DIR into WORK_DIR/prefix, then configures,
# builds and runs the consumer project CONSUMER_SOURCE against it, with the
# CMake generator, compilers and build type of the Loom build.
foreach(v BUILD_DIR WORK_DIR CONSUMER_SOURCE CMAKE_GENERATOR CMAKE_CXX_COMPILER)
  if(NOT DEFINED ${v})
    message(FATAL_ERROR "run_install_test.cmake: -D${v}=... is required")
  endif()
endforeach()
if(NOT CMAKE_BUILD_TYPE)
  set(CMAKE_BUILD_TYPE Release)
endif()
set(prefix ${WORK_DIR}/prefix)
set(build ${WORK_DIR}/consumer_build)
file(REMOVE_RECURSE ${WORK_DIR})

function(step what)
  message(STATUS "${what}")
  execute_process(COMMAND ${ARGN} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE out)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "${what} failed (${rc}):\n${out}")
  endif()
  message(STATUS "${out}")
endfunction()

step("installing ${BUILD_DIR} into ${prefix}"
  ${CMAKE_COMMAND} --install ${BUILD_DIR} --prefix ${prefix})

# Only the installed tree may be visible: not the build tree's package
# registry, nor any other Loom on the system.
step("configuring the consumer"
  ${CMAKE_COMMAND} -S ${CONSUMER_SOURCE} -B ${build} -G ${CMAKE_GENERATOR}
    -DCMAKE_CXX_COMPILER=${CMAKE_CXX_COMPILER}
    -DCMAKE_BUILD_TYPE=${CMAKE_BUILD_TYPE}
    -DCMAKE_PREFIX_PATH=${prefix}
    -DCMAKE_FIND_USE_PACKAGE_REGISTRY=OFF
    -DCMAKE_FIND_USE_SYSTEM_PACKAGE_REGISTRY=OFF
    -DEXPECTED_LOOM_PREFIX=${prefix})
step("building the consumer" ${CMAKE_COMMAND} --build ${build})
step("running the AOT consumer" ${build}/consumer)
step("running the JIT consumer" ${build}/consumer_jit)
file(REMOVE_RECURSE ${WORK_DIR})
message(STATUS "the installed Loom works for a consumer project")
