# Proves golden_diff.cmake can fail: CPU traces stand in for goldens; an
# untouched copy must pass and a copy with one flipped mask bit must fail
# with the divergence named (step, field, bit index).
foreach(v TRIESCOPE SAMPLES_DIR WORK_DIR DIFF_SCRIPT SAMPLE)
  if(NOT DEFINED ${v})
    message(FATAL_ERROR "golden_flip_test.cmake: -D${v}=... is required")
  endif()
endforeach()
include("${CMAKE_CURRENT_LIST_DIR}/golden_self_test.cmake")
golden_stand_in(text)

# Flip bit 0 of the first mask row: the low nibble of its first byte is the
# second hex digit of "rows":["..
string(FIND "${text}" "\"rows\":[\"" at)
if(at LESS 0)
  message(FATAL_ERROR "no mask rows in the ${SAMPLE} trace")
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
message(STATUS "flipped mask digit '${digit}' -> '${flipped_digit}' at byte ${digit_at}")
golden_expect_caught("${head}${flipped_digit}${tail}" "a flipped mask bit"
                     "first divergence at step 0 .*field forward\\.mask\\.rows\\[0\\], index 0")
