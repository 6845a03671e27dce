# Proves golden_diff.cmake catches a wrong verification decision, not only a
# mask bit: a CPU trace stands in for the golden of SAMPLE; an untouched copy
# must pass, and a copy whose first FIND is replaced by REPLACE must fail with
# a divergence matching EXPECT (the field the tampering changed).
cmake_minimum_required(VERSION 3.25)
foreach(v TRIESCOPE SAMPLES_DIR WORK_DIR DIFF_SCRIPT SAMPLE FIND REPLACE EXPECT)
  if(NOT DEFINED ${v})
    message(FATAL_ERROR "golden_tamper_test.cmake: -D${v}=... is required")
  endif()
endforeach()
include("${CMAKE_CURRENT_LIST_DIR}/golden_self_test.cmake")
golden_stand_in(text)
string(FIND "${text}" "${FIND}" at)
if(at LESS 0)
  message(FATAL_ERROR "${FIND} does not occur in the ${SAMPLE} trace")
endif()
string(SUBSTRING "${text}" 0 ${at} head)
string(LENGTH "${FIND}" len)
math(EXPR tail_at "${at} + ${len}")
string(SUBSTRING "${text}" ${tail_at} -1 tail)
golden_expect_caught("${head}${REPLACE}${tail}" "${FIND} -> ${REPLACE}" "${EXPECT}")
