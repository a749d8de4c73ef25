/* libloom_torch_kernels: the memory-bound apps compiled ahead of time for the
 * CPU and for a GPU (apps/CMakeLists.txt links their static libraries in
 * whole), for apps/bench/torch_compare.py. This file only names them. */

/** The apps in the library, comma-separated: each is loom_<app>_cpu,
 * loom_<app>_cuda, loom_<app>_cuda_aligned (aligned rows promised: rows
 * of a multiple of 4 floats), loom_<app>_cuda_fast (target feature
 * fast_math: approximate exp, division and square root) and, for the row
 * apps, loom_<app>_cuda_unstaged (generator param stage_rows=false) and
 * loom_<app>_cuda_registers (rows_in_registers=true: rows of exactly 16384
 * floats, aligned, kept in their threads' registers), with
 * their _argv and _metadata entry points; and loom_layernorm_cpu_one_pass,
 * loom_layernorm_cuda_one_pass and loom_layernorm_cuda_one_pass_unstaged
 * (generator param one_pass=true: the statistics in one pass over the
 * row). */
const char *loom_torch_kernels(void) { return "softmax,layernorm,rmsnorm,silu_chain"; }
