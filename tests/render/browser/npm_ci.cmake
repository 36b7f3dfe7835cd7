# Installs the browser test's npm packages (package-lock.json, so exact versions) into
# DESTINATION, only when the lock file changed since the last install.
# cmake -DNPM=npm -DSOURCE=dir-with-package.json -DDESTINATION=dir -P npm_ci.cmake
set(stamp ${DESTINATION}/node_modules/.memstage-lock-stamp)
file(SHA256 ${SOURCE}/package-lock.json lock_hash)
if(EXISTS ${stamp})
  file(READ ${stamp} installed_hash)
  if(installed_hash STREQUAL lock_hash)
    message(STATUS "npm packages up to date in ${DESTINATION}")
    return()
  endif()
endif()
file(MAKE_DIRECTORY ${DESTINATION})
file(COPY ${SOURCE}/package.json ${SOURCE}/package-lock.json DESTINATION ${DESTINATION})
execute_process(
  COMMAND ${NPM} ci --no-audit --no-fund --ignore-scripts
  WORKING_DIRECTORY ${DESTINATION}
  RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "npm ci failed (${rc}) in ${DESTINATION}")
endif()
file(WRITE ${stamp} ${lock_hash})
