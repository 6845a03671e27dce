# Records the golden CUDA traces on a machine with a GPU: every samples/*.json
# whose model (and draft model) is synthetic, whatever its algorithm, run with
# `triescope run --backend cuda` (RECORD_BACKEND=cuda-emu: the same kernels on
# the host runtime, for when the reference changed and no GPU is at hand;
# traces/golden/README.md says which recorded the set kept). Every trace is written to a scratch folder
# first and diffed against the CPU reference there; only when all of them
# were recorded and all are equivalent are they copied into GOLDEN_DIR, so a
# failure never leaves a partial set.
#   cmake -DTRIESCOPE=build-gpu/app/triescope -DSAMPLES_DIR=samples \
#         -DGOLDEN_DIR=traces/golden -DWORK_DIR=build-gpu/golden_record \
#         -P tests/golden/record_goldens.cmake
cmake_minimum_required(VERSION 3.25)  # policies NEW: quoted strings are not variable names
foreach(v TRIESCOPE SAMPLES_DIR GOLDEN_DIR WORK_DIR)
  if(NOT DEFINED ${v})
    message(FATAL_ERROR "record_goldens.cmake: -D${v}=... is required")
  endif()
endforeach()
if(NOT DEFINED RECORD_BACKEND)
  set(RECORD_BACKEND cuda)
endif()
if(NOT RECORD_BACKEND MATCHES "^cuda(-emu)?$")
  message(FATAL_ERROR "record_goldens.cmake: RECORD_BACKEND must be cuda or cuda-emu, got ${RECORD_BACKEND}")
endif()
file(REMOVE_RECURSE "${WORK_DIR}")
file(MAKE_DIRECTORY "${WORK_DIR}")
include("${CMAKE_CURRENT_LIST_DIR}/golden_samples.cmake")
golden_samples("${SAMPLES_DIR}" samples)
set(recorded "")
foreach(sample IN LISTS samples)
  get_filename_component(stem "${sample}" NAME_WE)
  file(READ "${sample}" text)
  string(JSON algo ERROR_VARIABLE e GET "${text}" algorithm)
  set(golden "${WORK_DIR}/${stem}.trace.jsonl")
  execute_process(COMMAND "${TRIESCOPE}" run "${sample}" --backend ${RECORD_BACKEND} --out "${golden}" --quiet
                  RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "${stem} (${algo}): triescope run --backend ${RECORD_BACKEND} failed (${rc}): ${out}${err}\nnothing was written to ${GOLDEN_DIR}")
  endif()
  execute_process(COMMAND "${TRIESCOPE}" run "${sample}" --backend cpu --out "${WORK_DIR}/${stem}.cpu.jsonl" --quiet RESULT_VARIABLE rc)
  execute_process(COMMAND "${TRIESCOPE}" diff "${golden}" "${WORK_DIR}/${stem}.cpu.jsonl" RESULT_VARIABLE rc OUTPUT_VARIABLE out)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "${stem} (${algo}): the CUDA trace diverges from the CPU reference: ${out}\nnothing was written to ${GOLDEN_DIR}")
  endif()
  message(STATUS "${stem} (${algo}): recorded, ${out}")
  list(APPEND recorded "${golden}")
endforeach()
if(NOT recorded)
  message(FATAL_ERROR "no sample has a synthetic model: nothing recorded")
endif()
file(COPY ${recorded} DESTINATION "${GOLDEN_DIR}")
list(LENGTH recorded n)
message(STATUS "${n} golden traces written to ${GOLDEN_DIR}")
