# Regenerates the CPU reference trace of every golden trace's sample and diffs
# it against the golden (`triescope diff GOLDEN CPU`); any divergence fails
# with the first divergence printed. Used by ctest and usable from CI:
#   cmake -DTRIESCOPE=build/app/triescope -DSAMPLES_DIR=samples \
#         -DGOLDEN_DIR=traces/golden -DWORK_DIR=build/golden_work \
#         -P tests/golden/golden_diff.cmake
# A golden is traces/golden/<sample stem>.trace.jsonl for samples/<stem>.json.
# BACKEND (default cpu): the backend that regenerates the trace (cpu, or
# cuda-emu: the same kernels on the host runtime).
# REQUIRE_CUDA_BACKEND (default ON): a golden must say "backend":"cuda" (or
# "cuda-emulated": recorded on the host runtime, as traces/golden/README.md says),
# so a CPU trace stored by mistake cannot make this check vacuous.
# REQUIRE_ALL (default ON): every sample with synthetic models
# (golden_samples.cmake) must have its golden; none is skipped.
foreach(v TRIESCOPE SAMPLES_DIR GOLDEN_DIR WORK_DIR)
  if(NOT DEFINED ${v})
    message(FATAL_ERROR "golden_diff.cmake: -D${v}=... is required")
  endif()
endforeach()
if(NOT DEFINED REQUIRE_CUDA_BACKEND)
  set(REQUIRE_CUDA_BACKEND ON)
endif()
if(NOT DEFINED REQUIRE_ALL)
  set(REQUIRE_ALL ON)
endif()
if(NOT DEFINED BACKEND)
  set(BACKEND cpu)
endif()

file(GLOB goldens "${GOLDEN_DIR}/*.trace.jsonl")
list(SORT goldens)
if(NOT goldens)
  message(FATAL_ERROR "no golden traces in ${GOLDEN_DIR} (record them on a GPU, see traces/golden/README.md)")
endif()

file(MAKE_DIRECTORY "${WORK_DIR}")
set(failures "")
if(REQUIRE_ALL)
  include("${CMAKE_CURRENT_LIST_DIR}/golden_samples.cmake")
  golden_samples("${SAMPLES_DIR}" wanted)
  foreach(sample IN LISTS wanted)
    get_filename_component(stem "${sample}" NAME_WE)
    if(NOT EXISTS "${GOLDEN_DIR}/${stem}.trace.jsonl")
      string(APPEND failures "\n  ${stem}: no golden ${GOLDEN_DIR}/${stem}.trace.jsonl for this synthetic sample")
    endif()
  endforeach()
endif()
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
    if(NOT header MATCHES "\"backend\":\"cuda(-emulated)?\"")
      string(APPEND failures "\n  ${golden}: header is not a CUDA-backend trace (\"backend\":\"cuda\" or \"cuda-emulated\" missing)")
      continue()
    endif()
  endif()
  set(cpu_trace "${WORK_DIR}/${stem}.${BACKEND}.trace.jsonl")
  execute_process(COMMAND "${TRIESCOPE}" run "${sample}" --backend ${BACKEND} --out "${cpu_trace}" --quiet
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
    string(APPEND failures "\n  ${stem}: golden (A) vs --backend ${BACKEND} (B) diverge: ${out}${err}")
  endif()
endforeach()
if(failures)
  message(FATAL_ERROR "golden trace check failed:${failures}")
endif()
