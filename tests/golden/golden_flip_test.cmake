# Proves golden_diff.cmake can fail: CPU traces stand in for goldens; an
# untouched copy must pass and a copy with one flipped mask bit must fail
# with the divergence named (step, field, bit index).
foreach(v TRIESCOPE SAMPLES_DIR WORK_DIR DIFF_SCRIPT SAMPLE)
  if(NOT DEFINED ${v})
    message(FATAL_ERROR "golden_flip_test.cmake: -D${v}=... is required")
  endif()
endforeach()
file(REMOVE_RECURSE "${WORK_DIR}")
file(MAKE_DIRECTORY "${WORK_DIR}/ok" "${WORK_DIR}/flipped")
set(golden "${WORK_DIR}/ok/${SAMPLE}.trace.jsonl")
execute_process(COMMAND "${TRIESCOPE}" run "${SAMPLES_DIR}/${SAMPLE}.json" --out "${golden}" --quiet RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "triescope run ${SAMPLE} failed (${rc})")
endif()

# Flip bit 0 of the first mask row: the low nibble of its first byte is the
# second hex digit of "rows":["..
file(READ "${golden}" text)
string(FIND "${text}" "\"rows\":[\"" at)
if(at LESS 0)
  message(FATAL_ERROR "no mask rows in ${golden}")
endif()
math(EXPR digit_at "${at} + 10")  # len("\"rows\":[\"") = 9, then the first digit
string(SUBSTRING "${text}" ${digit_at} 1 digit)
set(hex "0123456789abcdef")
string(FIND "${hex}" "${digit}" value)
math(EXPR flipped_value "${value} ^ 1")
string(SUBSTRING "${hex}" ${flipped_value} 1 flipped_digit)
string(SUBSTRING "${text}" 0 ${digit_at} head)
math(EXPR tail_at "${digit_at} + 1")
string(SUBSTRING "${text}" ${tail_at} -1 tail)
file(WRITE "${WORK_DIR}/flipped/${SAMPLE}.trace.jsonl" "${head}${flipped_digit}${tail}")
message(STATUS "flipped mask digit '${digit}' -> '${flipped_digit}' at byte ${digit_at}")

set(common -DTRIESCOPE=${TRIESCOPE} -DSAMPLES_DIR=${SAMPLES_DIR} -DREQUIRE_CUDA_BACKEND=OFF)
execute_process(COMMAND "${CMAKE_COMMAND}" ${common} -DGOLDEN_DIR=${WORK_DIR}/ok -DWORK_DIR=${WORK_DIR}/work_ok
                        -P "${DIFF_SCRIPT}" RESULT_VARIABLE rc_ok OUTPUT_VARIABLE out_ok ERROR_VARIABLE err_ok)
if(NOT rc_ok EQUAL 0 OR "${out_ok}${err_ok}" MATCHES "TRIESCOPE_GOLDEN_NONE")
  message(FATAL_ERROR "the untouched stand-in golden should pass, got ${rc_ok}: ${out_ok}${err_ok}")
endif()
execute_process(COMMAND "${CMAKE_COMMAND}" ${common} -DGOLDEN_DIR=${WORK_DIR}/flipped -DWORK_DIR=${WORK_DIR}/work_flipped
                        -P "${DIFF_SCRIPT}" RESULT_VARIABLE rc_bad OUTPUT_VARIABLE out_bad ERROR_VARIABLE err_bad)
message(STATUS "flipped golden: exit ${rc_bad}: ${out_bad}${err_bad}")
if(rc_bad EQUAL 0)
  message(FATAL_ERROR "a golden with a flipped mask bit passed the check")
endif()
if(NOT "${out_bad}${err_bad}" MATCHES "first divergence at step 0 .*field forward\\.mask\\.rows\\[0\\], index 0")
  message(FATAL_ERROR "the check failed, but without naming the flipped bit: ${out_bad}${err_bad}")
endif()
