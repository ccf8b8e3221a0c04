# Rewrites archive ARCHIVE as its own members plus those of archive ADD, with an MRI script that
# GNU ar and llvm-ar both accept (CREATE + ADDLIB + SAVE).
set(script "${ARCHIVE}.mri")
set(merged "${ARCHIVE}.merged")
file(WRITE "${script}" "CREATE ${merged}\nADDLIB ${ARCHIVE}\nADDLIB ${ADD}\nSAVE\nEND\n")
execute_process(COMMAND "${AR}" -M INPUT_FILE "${script}" RESULT_VARIABLE rc)
file(REMOVE "${script}")
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "merging ${ADD} into ${ARCHIVE} failed")
endif()
file(RENAME "${merged}" "${ARCHIVE}")
