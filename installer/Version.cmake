# SPDX-License-Identifier: Apache-2.0
# The version, from one place: the project's version, and when built from a git checkout that is
# not at its release tag (vX.Y.Z), how far past it: 0.1.0+git214.ca5649a (a dpkg version that
# sorts after 0.1.0 and before 0.1.1). Shown by every --version, the About box, daemon.info,
# the manual pages and the package's name.
set(AIRLOCK_VERSION ${PROJECT_VERSION})
find_package(Git QUIET)
if(GIT_FOUND AND EXISTS ${PROJECT_SOURCE_DIR}/.git)
  execute_process(COMMAND ${GIT_EXECUTABLE} describe --tags --exact-match --match v${PROJECT_VERSION}
                  WORKING_DIRECTORY ${PROJECT_SOURCE_DIR} RESULT_VARIABLE at_tag OUTPUT_QUIET ERROR_QUIET)
  if(NOT at_tag EQUAL 0)
    execute_process(COMMAND ${GIT_EXECUTABLE} rev-list --count HEAD WORKING_DIRECTORY ${PROJECT_SOURCE_DIR}
                    OUTPUT_VARIABLE commits OUTPUT_STRIP_TRAILING_WHITESPACE ERROR_QUIET)
    execute_process(COMMAND ${GIT_EXECUTABLE} rev-parse --short=7 HEAD WORKING_DIRECTORY ${PROJECT_SOURCE_DIR}
                    OUTPUT_VARIABLE hash OUTPUT_STRIP_TRAILING_WHITESPACE ERROR_QUIET)
    if(commits AND hash)
      set(AIRLOCK_VERSION "${PROJECT_VERSION}+git${commits}.${hash}")
    endif()
  endif()
endif()
message(STATUS "Airlock ${AIRLOCK_VERSION}")
