# `--attention dense` under an address-space cap (ulimit -v, in a child shell):
#  1. batch beam search, b = 15, a 1,024-token prompt, on samples/
#     transformer_tiny.json's model: the dense path builds a mask per beam, so
#     the run fits in CAP_KB (3 GiB; the program alone maps < 1 GiB). One mask
#     over all beams is (15 x 1,024)^2 floats = 0.94 GB and its scores 4 heads
#     that size, 3.8 GB in one allocation: an internal error, exit 3.
#  2. one beam over a prompt of 12,288 tokens: one beam's scores alone
#     (12,288^2 x 4 heads x 4 bytes = 2.25 GiB) and its mask exceed the cap, and the run must
#     end with a named error (what was allocated, which option to change),
#     exit 2, no LibTorch backtrace, no trace file.
foreach(v TRIESCOPE WORK_DIR CAP_KB)
  if(NOT DEFINED ${v})
    message(FATAL_ERROR "cli_dense_memory.cmake: -D${v}=... is required")
  endif()
endforeach()
file(REMOVE_RECURSE "${WORK_DIR}")
file(MAKE_DIRECTORY "${WORK_DIR}")

# write_sample(<file> <beams> <prompt length>)
function(write_sample file beams n)
  set(prompt "")
  foreach(i RANGE 1 ${n})
    math(EXPR t "(${i} * 37) % 250 + 3")
    string(APPEND prompt "${t},")
  endforeach()
  string(REGEX REPLACE ",$" "" prompt "${prompt}")
  math(EXPR maxpos "${n} + 64")
  file(WRITE "${file}" "{\"schema\": \"triescope.sample\", \"version\": 1, \"name\": \"dense memory\", \"algorithm\": \"batch_beam_search\",
 \"model\": {\"type\": \"transformer\", \"random_init\": {\"vocab_size\": 256, \"hidden_size\": 64, \"intermediate_size\": 176,
  \"num_hidden_layers\": 2, \"num_attention_heads\": 4, \"num_key_value_heads\": 2, \"rms_norm_eps\": 1e-6, \"rope_theta\": 10000.0,
  \"max_position_embeddings\": ${maxpos}, \"tie_word_embeddings\": false}, \"seed\": 7, \"init_std\": 0.2, \"device\": \"cpu\",
  \"attention\": \"dense\"},
 \"prompt\": [${prompt}],
 \"beam\": {\"num_beams\": ${beams}, \"max_new_tokens\": 2, \"eos_token\": 2, \"length_penalty\": 1.0, \"early_stopping\": \"never\"}}
")
endfunction()

# run_capped(<sample> <trace> <rc var> <stderr var>)
function(run_capped sample trace rc_var err_var)
  execute_process(COMMAND sh -c "ulimit -v ${CAP_KB} && OMP_NUM_THREADS=1 exec \"$0\" run \"$1\" --out \"$2\" --quiet" "${TRIESCOPE}" "${sample}" "${trace}"
                  RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
  set(${rc_var} "${rc}" PARENT_SCOPE)
  set(${err_var} "${out}${err}" PARENT_SCOPE)
endfunction()

write_sample("${WORK_DIR}/b15.json" 15 1024)
run_capped("${WORK_DIR}/b15.json" "${WORK_DIR}/b15.trace.jsonl" rc err)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "batch beam search b = 15, prompt 1024, attention dense, under ulimit -v ${CAP_KB} failed (${rc}): ${err}")
endif()

write_sample("${WORK_DIR}/long.json" 1 12288)
run_capped("${WORK_DIR}/long.json" "${WORK_DIR}/long.trace.jsonl" rc err)
if(NOT rc EQUAL 2)
  message(FATAL_ERROR "a dense step over the cap must end with exit 2, got ${rc}: ${err}")
endif()
if(NOT err MATCHES "error: transformer on cpu: LibTorch failed while computing attention \"dense\" \\(path dense\\) scores of 12288 queries x 12288 slots x 4 heads")
  message(FATAL_ERROR "the failure does not name the allocation: ${err}")
endif()
if(NOT err MATCHES "use attention \"tree_kernel\" or \"auto\"")
  message(FATAL_ERROR "the failure does not name the option to change: ${err}")
endif()
if(err MATCHES "frame #|internal error|Exception raised from")
  message(FATAL_ERROR "a LibTorch backtrace or an internal error escaped: ${err}")
endif()
if(EXISTS "${WORK_DIR}/long.trace.jsonl")
  message(FATAL_ERROR "a failed run left its trace file behind")
endif()
