file(REMOVE_RECURSE ${PREFIX} ${OUT})
execute_process(COMMAND ${CMAKE_COMMAND} --install ${BUILD_DIR} --prefix ${PREFIX}
                RESULT_VARIABLE rc OUTPUT_QUIET)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "cmake --install failed (${rc})")
endif()
# Run with an environment that cannot point at the build tree.
# --serve 0: the HTTP module (libmemstage_http.so) is found beside the preload library too.
execute_process(COMMAND ${CMAKE_COMMAND} -E env --unset=MEMSTAGE_PRELOAD
                        ${PREFIX}/bin/memstage run -q --serve 0 -o ${OUT} -- /bin/sh -c "exit 3"
                RESULT_VARIABLE rc)
if(NOT rc EQUAL 3)
  message(FATAL_ERROR "installed memstage run exited ${rc}, expected the command's 3")
endif()
if(NOT EXISTS ${OUT}/report.json OR NOT EXISTS ${OUT}/report.html)
  message(FATAL_ERROR "installed memstage run wrote no report")
endif()
file(READ ${OUT}/report.json report)
string(JSON schema GET "${report}" schema)
if(NOT schema STREQUAL "memstage.report/2")
  message(FATAL_ERROR "unexpected schema ${schema}")
endif()
