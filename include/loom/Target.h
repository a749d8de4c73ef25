// Where compiled code runs: an architecture, an OS and a set of features.
#pragma once

#include <string>
#include <vector>

namespace loom {

/** A compilation target, written as a string: "host" (this machine, with the
 * features it has), or "arch-os[-feature...]" such as "x86-64-linux-avx2" or
 * "x86-64-linux-avx512". Features: sse41, avx, avx2, fma, f16c, avx512,
 * no_asserts, debug, fast_math, llvm_loop_opt, cuda, cuda_source.
 *
 * `cuda` adds an NVIDIA GPU: loops scheduled with gpu_blocks / gpu_threads
 * become CUDA kernels. A GPU capability token, sm_80, sm_86, sm_89, sm_90 or
 * sm_90a (Hopper's architecture-specific instructions), names the GPU and
 * implies cuda: "host-cuda-sm_90a". "host-cuda" alone means the capability
 * of the device found when the pipeline first runs. */
class Target {
  public:
    enum Arch { X86_64 };
    enum OS { Linux };
    enum Feature {
        SSE41,
        AVX,
        AVX2,
        FMA,
        F16C,
        AVX512,
        NoAsserts,
        Debug,
        /** Lets float32/float64 arithmetic be reassociated and contracted into
         * fused multiply-adds, and divisions by constants become
         * multiplications by reciprocals, as Halide does by default. Results
         * then differ from the interpreter in the last bits; serial float
         * reductions vectorize and a * b + c fuses. Float min and max may
         * also assume that no operand is NaN (so that min/max reductions
         * vectorize): with a NaN operand their result is unspecified, but
         * never makes compiled code branch or index out of bounds. With
         * cuda, the GPU kernels are compiled with NVRTC's --use_fast_math:
         * exp, log, sin and cos are the hardware's approximations, division
         * and square roots are not correctly rounded, and denormals flush
         * to zero (softmax's exp costs 2 instructions instead of 8). */
        FastMath,
        /** Lets LLVM's loop vectorizer, interleaver and unroller run on the
         * generated code. Off by default, as in Halide: the schedule decides
         * which loops are vectorized and unrolled, so these passes would
         * mostly cost compile time (they are the largest part of it) and
         * rewrite loops the user chose to leave scalar. LLVM's SLP
         * vectorizer, which has no counterpart in the schedule, always runs. */
        LLVMLoopOpt,
        /** An NVIDIA GPU, programmed in CUDA C++ compiled by NVRTC. */
        CUDA,
        /** With cuda: code compiled ahead of time carries its kernels' CUDA
         * C++ source besides the cubin and PTX (JIT code always does), for a
         * driver that compiles source itself: the test suite's stand-in,
         * which runs kernels on the CPU. Implies cuda. */
        CUDASource,
        FeatureEnd
    };

    Target() : Target("host") {}
    Target(const char *s) : Target(std::string(s)) {}
    explicit Target(const std::string &s);

    /** The target that describes this machine. */
    static Target host();

    Arch arch = X86_64;
    OS os = Linux;
    bool has_feature(Feature f) const { return (features >> f) & 1u; }
    Target with_feature(Feature f) const;
    Target without_feature(Feature f) const;
    /** Natural vector width in bytes: 64 with avx512, 32 with avx/avx2, else 16. */
    int vector_bytes() const;
    std::string to_string() const;
    /** The GPU capability as major * 10 + minor (80, 86, 89, 90), or 0: the
     * device's, read when the pipeline first runs. */
    int cuda_capability() const { return cuda_capability_; }
    /** Whether the capability has the "a" suffix (sm_90a): instructions
     * such as wgmma, which only that architecture runs. */
    bool cuda_arch_specific() const { return cuda_arch_specific_; }
    /** The NVRTC architecture name, e.g. "sm_90a"; empty when the capability
     * is the device's. */
    std::string cuda_arch() const;
    bool operator==(const Target &o) const {
        return arch == o.arch && os == o.os && features == o.features &&
               cuda_capability_ == o.cuda_capability_ &&
               cuda_arch_specific_ == o.cuda_arch_specific_;
    }
    bool operator!=(const Target &o) const { return !(*this == o); }

  private:
    unsigned features = 0;
    int cuda_capability_ = 0;
    bool cuda_arch_specific_ = false;
};

}  // namespace loom
