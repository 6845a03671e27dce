# Regenerates the CPU reference trace of every golden trace's sample and diffs
# it against the golden (`triescope diff GOLDEN CPU`); any divergence fails
# with the first divergence printed. Used by ctest and usable from CI:
#   cmake -DTRIESCOPE=build/app/triescope -DSAMPLES_DIR=samples \
#         -DGOLDEN_DIR=traces/golden -DWORK_DIR=build/golden_work \
#         -P tests/golden/golden_diff.cmake
# A golden is traces/golden/<sample stem>.trace.jsonl for samples/<stem>.json.
# REQUIRE_CUDA_BACKEND (default ON): a golden must say "backend":"cuda", so a
# CPU trace stored by mistake cannot make this check vacuous.
foreach(v TRIESCOPE SAMPLES_DIR GOLDEN_DIR WORK_DIR)
  if(NOT DEFINED ${v})
    message(FATAL_ERROR "golden_diff.cmake: -D${v}=... is required")
  endif()
endforeach()
if(NOT DEFINED REQUIRE_CUDA_BACKEND)
  set(REQUIRE_CUDA_BACKEND ON)
endif()

file(GLOB goldens "${GOLDEN_DIR}/*.trace.jsonl")
list(SORT goldens)
if(NOT goldens)
  # ctest maps this line to "skipped" (SKIP_REGULAR_EXPRESSION), never "passed".
  message("TRIESCOPE_GOLDEN_NONE: no golden traces in ${GOLDEN_DIR} (record them on a GPU, see traces/golden/README.md)")
  return()
endif()

file(MAKE_DIRECTORY "${WORK_DIR}")
set(failures "")
foreach(golden IN LISTS goldens)
  get_filename_component(name "${golden}" NAME)
  string(REGEX REPLACE "\\.trace\\.jsonl$" "" stem "${name}")
  set(sample "${SAMPLES_DIR}/${stem}.json")
  if(NOT EXISTS "${sample}")
    string(APPEND failures "\n  ${golden}: no sample ${sample} to regenerate it from")
    continue()
  endif()
  if(REQUIRE_CUDA_BACKEND)
    file(STRINGS "${golden}" header LIMIT_COUNT 1)
    if(NOT header MATCHES "\"backend\":\"cuda\"")
      string(APPEND failures "\n  ${golden}: header is not a CUDA trace (\"backend\":\"cuda\" missing)")
      continue()
    endif()
  endif()
  set(cpu_trace "${WORK_DIR}/${stem}.cpu.trace.jsonl")
  execute_process(COMMAND "${TRIESCOPE}" run "${sample}" --backend cpu --out "${cpu_trace}" --quiet
                  RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
  if(NOT rc EQUAL 0)
    string(APPEND failures "\n  ${stem}: triescope run failed (${rc}): ${out}${err}")
    continue()
  endif()
  execute_process(COMMAND "${TRIESCOPE}" diff "${golden}" "${cpu_trace}"
                  RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
  if(rc EQUAL 0)
    message(STATUS "${stem}: ${out}")
  else()
    string(APPEND failures "\n  ${stem}: golden (A) vs CPU reference (B) diverge: ${out}${err}")
  endif()
endforeach()
if(failures)
  message(FATAL_ERROR "golden trace check failed:${failures}")
endif()
