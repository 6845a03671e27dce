# Shared by the golden check's self-tests (golden_flip_test.cmake,
# golden_tamper_test.cmake), which prove golden_diff.cmake can fail: a CPU
# trace of SAMPLE stands in for its golden; the untouched copy must pass and
# an altered copy must fail, naming what was altered.
# Needs TRIESCOPE, SAMPLES_DIR, WORK_DIR, DIFF_SCRIPT, SAMPLE.

# Writes the stand-in golden to ${WORK_DIR}/ok and returns its text in `out_text`.
function(golden_stand_in out_text)
  file(REMOVE_RECURSE "${WORK_DIR}")
  file(MAKE_DIRECTORY "${WORK_DIR}/ok" "${WORK_DIR}/bad")
  set(golden "${WORK_DIR}/ok/${SAMPLE}.trace.jsonl")
  execute_process(COMMAND "${TRIESCOPE}" run "${SAMPLES_DIR}/${SAMPLE}.json" --out "${golden}" --quiet RESULT_VARIABLE rc)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "triescope run ${SAMPLE} failed (${rc})")
  endif()
  file(READ "${golden}" text)
  set(${out_text} "${text}" PARENT_SCOPE)
endfunction()

# Writes the altered golden, then requires: the untouched one passes, the
# altered one fails with output matching `expect`.
function(golden_expect_caught altered_text what expect)
  file(WRITE "${WORK_DIR}/bad/${SAMPLE}.trace.jsonl" "${altered_text}")
  set(common -DTRIESCOPE=${TRIESCOPE} -DSAMPLES_DIR=${SAMPLES_DIR} -DREQUIRE_CUDA_BACKEND=OFF -DREQUIRE_ALL=OFF)
  execute_process(COMMAND "${CMAKE_COMMAND}" ${common} -DGOLDEN_DIR=${WORK_DIR}/ok -DWORK_DIR=${WORK_DIR}/work_ok
                          -P "${DIFF_SCRIPT}" RESULT_VARIABLE rc_ok OUTPUT_VARIABLE out_ok ERROR_VARIABLE err_ok)
  if(NOT rc_ok EQUAL 0 OR "${out_ok}${err_ok}" MATCHES "TRIESCOPE_GOLDEN_NONE")
    message(FATAL_ERROR "the untouched stand-in golden should pass, got ${rc_ok}: ${out_ok}${err_ok}")
  endif()
  execute_process(COMMAND "${CMAKE_COMMAND}" ${common} -DGOLDEN_DIR=${WORK_DIR}/bad -DWORK_DIR=${WORK_DIR}/work_bad
                          -P "${DIFF_SCRIPT}" RESULT_VARIABLE rc_bad OUTPUT_VARIABLE out_bad ERROR_VARIABLE err_bad)
  message(STATUS "golden with ${what}: exit ${rc_bad}: ${out_bad}${err_bad}")
  if(rc_bad EQUAL 0)
    message(FATAL_ERROR "a golden with ${what} passed the check")
  endif()
  if(NOT "${out_bad}${err_bad}" MATCHES "${expect}")
    message(FATAL_ERROR "the check failed, but without naming ${what} (${expect}): ${out_bad}${err_bad}")
  endif()
endfunction()
