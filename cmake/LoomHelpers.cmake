# CMake functions for building Loom generators and the libraries they make.
# Included by Loom's own build and by find_package(Loom) (LoomConfig.cmake),
# so a project uses the same functions in-tree and against an installed Loom.
#
#   loom_add_generator(NAME SOURCES src.cpp... [LINK_LIBRARIES lib...])
#     An executable NAME holding the generators registered in the sources
#     (LOOM_REGISTER_GENERATOR), with Loom's driver main() (loom-gen's
#     command line; run it with --help or --list).
#
#   loom_add_library(NAME GENERATOR gen_target
#                    [GENERATOR_NAME registered_name]  # needed if gen_target holds several
#                    [TARGET target_string]            # default: host
#                    [FUNCTION_NAME c_name]            # default: NAME
#                    [PARAMS name=value...]
#                    [EMIT kinds...])                  # extra files: stmt, assembly, llvm_ir, object
#     Runs the generator at build time to make NAME.a and NAME.h in the
#     current binary directory, and defines a target NAME to link against:
#         target_link_libraries(app PRIVATE NAME)   # then #include "NAME.h"
#     The library holds the pipeline and the small runtime it needs; it does
#     not need libloom or LLVM.

include_guard(GLOBAL)

function(loom_add_generator NAME)
  cmake_parse_arguments(ARG "" "" "SOURCES;LINK_LIBRARIES" ${ARGN})
  if(NOT ARG_SOURCES)
    message(FATAL_ERROR "loom_add_generator(${NAME}): SOURCES is required")
  endif()
  add_executable(${NAME} ${ARG_SOURCES})
  target_link_libraries(${NAME} PRIVATE Loom::generator_main ${ARG_LINK_LIBRARIES})
endfunction()

function(loom_add_library NAME)
  cmake_parse_arguments(ARG "" "GENERATOR;GENERATOR_NAME;TARGET;FUNCTION_NAME"
                        "PARAMS;EMIT" ${ARGN})
  if(ARG_UNPARSED_ARGUMENTS)
    message(FATAL_ERROR "loom_add_library(${NAME}): unknown arguments ${ARG_UNPARSED_ARGUMENTS}")
  endif()
  if(NOT ARG_GENERATOR)
    message(FATAL_ERROR "loom_add_library(${NAME}): GENERATOR <executable target> is required")
  endif()
  if(NOT TARGET ${ARG_GENERATOR})
    message(FATAL_ERROR "loom_add_library(${NAME}): GENERATOR ${ARG_GENERATOR} is not a target; "
                        "make it with loom_add_generator() first")
  endif()
  if(NOT ARG_TARGET)
    set(ARG_TARGET host)
  endif()
  if(NOT ARG_FUNCTION_NAME)
    set(ARG_FUNCTION_NAME ${NAME})
  endif()
  set(gen_args)
  if(ARG_GENERATOR_NAME)
    list(APPEND gen_args -g ${ARG_GENERATOR_NAME})
  endif()

  set(dir ${CMAKE_CURRENT_BINARY_DIR})
  set(outputs ${dir}/${NAME}.a ${dir}/${NAME}.h)
  set(kinds static_library)
  set(suffix_stmt .stmt)
  set(suffix_assembly .s)
  set(suffix_llvm_ir .ll)
  set(suffix_object .o)
  foreach(kind IN LISTS ARG_EMIT)
    if(NOT DEFINED suffix_${kind})
      message(FATAL_ERROR "loom_add_library(${NAME}): unknown EMIT kind ${kind}; "
                          "valid kinds are stmt, assembly, llvm_ir, object")
    endif()
    list(APPEND kinds ${kind})
    list(APPEND outputs ${dir}/${NAME}${suffix_${kind}})
  endforeach()
  list(JOIN kinds "," kinds)

  add_custom_command(
    OUTPUT ${outputs}
    COMMAND ${ARG_GENERATOR} ${gen_args} -o ${dir} -n ${NAME} -f ${ARG_FUNCTION_NAME}
            -e ${kinds} target=${ARG_TARGET} ${ARG_PARAMS}
    DEPENDS ${ARG_GENERATOR}
    COMMENT "Loom: generating ${NAME} with ${ARG_GENERATOR} ${gen_args} ${ARG_PARAMS}"
    VERBATIM)
  add_custom_target(${NAME}.generate DEPENDS ${outputs})

  # An imported library is the natural shape for a file some command makes:
  # it links like any library, and add_dependencies makes every consumer wait
  # for the generator to run.
  add_library(${NAME} STATIC IMPORTED GLOBAL)
  set_target_properties(${NAME} PROPERTIES IMPORTED_LOCATION ${dir}/${NAME}.a)
  # The header is self-contained (it carries the C ABI of loom_runtime.h),
  # so users of the library need neither Loom's headers nor libloom.
  target_include_directories(${NAME} INTERFACE ${dir})
  find_package(Threads REQUIRED)
  target_link_libraries(${NAME} INTERFACE Threads::Threads ${CMAKE_DL_LIBS} m)
  add_dependencies(${NAME} ${NAME}.generate)
endfunction()
