# Every samples/*.json recorded by `triescope run` on the CPU and, where the
# CLI has the host runtime, on cuda-emu, each trace validated against
# docs/trace-format.schema.json with --strict (scripts/validate_trace_schema.py),
# all in one validator process (records the backends share are validated once).
#
# The cuda-emu traces are the ones cli_run_backend_cuda_emu_every_sample
# (tests/cuda/cli_backend_cuda_all.cmake, a fixture of this test) wrote under
# EMU_DIR: <sample>/cuda.trace.jsonl, and the STATIC samples' ranking-sparse
# variants <sample>/sparse/*.trace.jsonl. That test also records a synthetic
# sample on the CPU (<sample>/cpu.trace.jsonl): such a trace is validated here
# instead of running the sample again. Every other sample runs here with
# --backend cpu; one the CLI refuses (exit 2: a model you bring, an engine not
# built) is listed and skipped, any other failure fails the test. Two variants
# add the writers no sample reaches (greedy; MultiGen's copy method).
cmake_minimum_required(VERSION 3.25)
foreach(v TRIESCOPE PYTHON VALIDATOR SAMPLES_DIR WORK_DIR)
  if(NOT DEFINED ${v})
    message(FATAL_ERROR "samples_schema.cmake: -D${v}=... is required")
  endif()
endforeach()
file(REMOVE_RECURSE "${WORK_DIR}")
file(MAKE_DIRECTORY "${WORK_DIR}")
file(GLOB samples "${SAMPLES_DIR}/*.json")
list(SORT samples)
set(traces "")
set(failures "")
set(ran 0)
set(reused 0)
foreach(sample IN LISTS samples)
  get_filename_component(stem "${sample}" NAME_WE)
  # The emu test's CPU trace of the sample itself (not of a rewritten twin).
  if(DEFINED EMU_DIR AND EXISTS "${EMU_DIR}/${stem}/cpu.trace.jsonl" AND NOT EXISTS "${EMU_DIR}/${stem}/cpu_tree_kernel.json")
    list(APPEND traces "${EMU_DIR}/${stem}/cpu.trace.jsonl")
    math(EXPR reused "${reused} + 1")
    continue()
  endif()
  set(out "${WORK_DIR}/${stem}.cpu.trace.jsonl")
  execute_process(COMMAND "${TRIESCOPE}" run "${sample}" --backend cpu --out "${out}" --quiet
                  RESULT_VARIABLE rc OUTPUT_QUIET ERROR_VARIABLE err)
  string(STRIP "${err}" err)
  if(rc EQUAL 0)
    list(APPEND traces "${out}")
    math(EXPR ran "${ran} + 1")
  elseif(rc EQUAL 2)
    message(STATUS "${stem}: refused on cpu, not validated: ${err}")
  else()
    string(APPEND failures "\n  ${stem}: triescope run --backend cpu exited ${rc}: ${err}")
  endif()
endforeach()
# Writers no sample reaches: greedy (core/decode/greedy_decode.cpp, from the
# lookahead sample) and MultiGen's copy method ("live_samples").
set(variants "")
if(EXISTS "${SAMPLES_DIR}/lookahead_repetitive.json")
  file(READ "${SAMPLES_DIR}/lookahead_repetitive.json" text)
  string(JSON text SET "${text}" algorithm "\"greedy\"")
  string(JSON text REMOVE "${text}" lookahead)
  string(JSON text SET "${text}" greedy "{\"max_new_tokens\": 20}")
  file(WRITE "${WORK_DIR}/variant_greedy.json" "${text}")
  list(APPEND variants greedy)
endif()
if(EXISTS "${SAMPLES_DIR}/multigen_synthetic.json")
  file(READ "${SAMPLES_DIR}/multigen_synthetic.json" text)
  string(JSON text SET "${text}" multigen method "\"copy\"")
  file(WRITE "${WORK_DIR}/variant_multigen_copy.json" "${text}")
  list(APPEND variants multigen_copy)
endif()
foreach(v IN LISTS variants)
  set(out "${WORK_DIR}/variant_${v}.cpu.trace.jsonl")
  execute_process(COMMAND "${TRIESCOPE}" run "${WORK_DIR}/variant_${v}.json" --backend cpu --out "${out}" --quiet
                  RESULT_VARIABLE rc OUTPUT_QUIET ERROR_VARIABLE err)
  if(rc EQUAL 0)
    list(APPEND traces "${out}")
  else()
    string(APPEND failures "\n  variant ${v}: triescope run --backend cpu exited ${rc}: ${err}")
  endif()
endforeach()
list(LENGTH traces cpu_traces)
set(emu_traces 0)
if(DEFINED EMU_DIR)
  file(GLOB emu "${EMU_DIR}/*/cuda.trace.jsonl" "${EMU_DIR}/*/sparse/*.trace.jsonl")
  list(LENGTH emu emu_traces)
  if(emu_traces EQUAL 0)
    string(APPEND failures "\n  no cuda-emu trace under ${EMU_DIR} (did cli_run_backend_cuda_emu_every_sample run?)")
  endif()
  list(APPEND traces ${emu})
endif()
if(failures)
  message(FATAL_ERROR "samples_schema:${failures}")
endif()
if(cpu_traces EQUAL 0)
  message(FATAL_ERROR "samples_schema: no sample ran on cpu")
endif()
message(STATUS "cpu: ${cpu_traces} traces (${ran} run here, ${reused} from the cuda-emu test); cuda-emu: ${emu_traces} traces")
execute_process(COMMAND "${PYTHON}" "${VALIDATOR}" --strict ${traces} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
message("${out}${err}")
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "samples_schema: a sample's trace does not validate against the schema (exit ${rc})")
endif()
