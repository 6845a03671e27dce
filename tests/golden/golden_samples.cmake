# golden_samples(<samples_dir> <out_var>): the samples that get a golden CUDA
# trace: every samples/*.json whose model (and draft model) is synthetic, the
# models with a CUDA twin. Shared by record_goldens.cmake and golden_diff.cmake.
function(golden_samples samples_dir out_var)
  file(GLOB samples "${samples_dir}/*.json")
  list(SORT samples)
  set(out "")
  foreach(sample IN LISTS samples)
    file(READ "${sample}" text)
    string(JSON mtype ERROR_VARIABLE e GET "${text}" model type)
    string(JSON dtype ERROR_VARIABLE no_draft GET "${text}" draft_model type)
    if(mtype STREQUAL "synthetic" AND (no_draft OR dtype STREQUAL "synthetic"))
      list(APPEND out "${sample}")
    endif()
  endforeach()
  set(${out_var} "${out}" PARENT_SCOPE)
endfunction()
