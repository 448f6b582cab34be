# The ctest test catch_test_names: every Catch2 case of every test binary is run by exactly one ctest
# test under its own name (tests/catch_test_names.py says which names break catch_discover_tests).
# The binaries are the executables linking Catch2 (through streamd_catch_main, tests/support, or
# directly), collected once every directory has been added, so a new test directory is covered
# without a line of its own.

function(streamd_catch_binaries dir out)
  set(found "")
  get_property(targets DIRECTORY "${dir}" PROPERTY BUILDSYSTEM_TARGETS)
  foreach(target IN LISTS targets)
    get_target_property(type ${target} TYPE)
    get_target_property(libs ${target} LINK_LIBRARIES)
    if(type STREQUAL "EXECUTABLE" AND ("streamd_catch_main" IN_LIST libs OR "Catch2::Catch2" IN_LIST libs))
      list(APPEND found "$<TARGET_FILE:${target}>")
    endif()
  endforeach()
  get_property(subdirs DIRECTORY "${dir}" PROPERTY SUBDIRECTORIES)
  foreach(subdir IN LISTS subdirs)
    streamd_catch_binaries("${subdir}" below)
    list(APPEND found ${below})
  endforeach()
  set(${out} "${found}" PARENT_SCOPE)
endfunction()

function(streamd_add_catch_test_names_check)
  streamd_catch_binaries("${PROJECT_SOURCE_DIR}" binaries)
  add_test(NAME catch_test_names
    COMMAND ${PROJECT_SOURCE_DIR}/tests/catch_test_names.py ${CMAKE_CTEST_COMMAND} ${PROJECT_BINARY_DIR}
            ${binaries})
  set_tests_properties(catch_test_names PROPERTIES TIMEOUT 300)
endfunction()

cmake_language(DEFER DIRECTORY ${PROJECT_SOURCE_DIR} CALL streamd_add_catch_test_names_check)
