# Appends the members of archive ADD to archive ARCHIVE (GNU ar's MRI script mode).
set(script "${ARCHIVE}.mri")
file(WRITE "${script}" "OPEN ${ARCHIVE}\nADDLIB ${ADD}\nSAVE\nEND\n")
execute_process(COMMAND "${AR}" -M INPUT_FILE "${script}" RESULT_VARIABLE rc)
file(REMOVE "${script}")
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "merging ${ADD} into ${ARCHIVE} failed")
endif()
