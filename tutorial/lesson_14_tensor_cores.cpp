// Lesson 14: from a plain matrix product to a tensor-core tile program.
//
// The algorithm is the one of lesson 3: a sum over k of products. On a
// GPU the fast way to compute it is not one thread per output but one
// block per tile of the output, whose warps multiply 16 x 8 x 16 pieces on
// tensor cores (mma.sync), with the operands staged through shared memory
// by asynchronous copies (cp.async) and read into the instruction's
// registers by ldmatrix. Two directives ask for it:
//
//   tile_program(i, j, io, jo, rows, cols, options)
//       the Func becomes a block-level tile program: one block per rows x
//       cols tile (io, jo number them), every value inside a whole tile;
//       the Funcs computed at jo join the program (here the accumulator)
//   tensorize("mma.m16n8k16")
//       the accumulator's update, a contraction, runs on that instruction:
//       the compiler checks that the update computes what it computes
//
// Sections 1 to 4 need no GPU (NVRTC compiles without one); section 5 runs
// the kernel where there is a GPU, and the same schedule on the CPU;
// section 6 adds a softmax along the product's rows to the program.
#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include <loom/loom.h>

using namespace loom;

/** nvdisasm, on the PATH or from PyPI's nvidia-cuda-nvdisasm; "" if none. */
std::string find_nvdisasm() {
    const char *probe =
        "command -v nvdisasm 2>/dev/null || python3 -c \"import glob, nvidia; "
        "print((glob.glob(nvidia.__path__[0] + '/cu*/bin/nvdisasm') + [''])[0])\" 2>/dev/null";
    std::string out;
    if (FILE *f = popen(probe, "r")) {
        char buf[512];
        while (fgets(buf, sizeof buf, f)) out += buf;
        pclose(f);
    }
    return out.substr(0, out.find('\n'));
}

int main() {
    // ---- 1. The algorithm: C = A B, half-precision inputs, float sums.
    BufferParam A(Float(16), 2, "A"), B(Float(16), 2, "B");
    Var i("i"), j("j"), io("io"), jo("jo");
    RDom k(0, A.dim(1).extent(), "k");
    Func acc("acc"), C("C");
    acc(i, j) = 0.0f;
    acc(i, j) += cast<float>(A(i, k)) * cast<float>(B(k, j));
    // The epilogue: whatever follows the sum runs on the accumulator's
    // registers before the store (here a scale and a ReLU).
    C(i, j) = max(acc(i, j) * 0.5f, 0.0f);

    // ---- 2. The schedule: 64 x 64 tiles, 2 x 2 warps (each 32 x 32), the
    // reduction in steps of 32, three stages of copies in flight.
    Schedule sch;
    sch[C].tile_program(i, j, io, jo, 64, 64,
                        TileOptions().warps(2, 2).reduction_tile(32).pipeline_stages(3));
    sch[acc].compute_at(C, jo).update().tensorize("mma.m16n8k16");

    // The tile program, in the lowered statement: each value with its type
    // and layout (which thread and register hold which element). The
    // operands go to shared memory (swizzled, 3 slots), are converted to
    // the instruction's A and B fragments, and the dot accumulates in the
    // accumulator's layout, where the epilogue's map runs too.
    const Target gpu("host-cuda-sm_80");
    const std::string lowered = Pipeline(C).compile_to_lowered_stmt(sch, gpu);
    std::printf("1. the tile program\n");
    const size_t start = lowered.find("    tile_program");
    if (start == std::string::npos) {
        std::printf("expected a tile program\n");
        return 1;
    }
    std::printf("%s", lowered.substr(start, lowered.find("\n  }", start) - start + 1).c_str());

    // ---- 3. The CUDA: one kernel per program, the instructions as inline
    // PTX (mma.sync, ldmatrix, cp.async) from src/codegen/cuda/.
    std::printf("\n2. the CUDA's instructions\n");
    const std::string cuda = Pipeline(C).compile_to_cuda(sch, gpu);
    for (const char *w : {"mma.sync.aligned.m16n8k16", "ldmatrix.sync.aligned", "cp.async.cg"}) {
        if (cuda.find(w) == std::string::npos) {
            std::printf("expected %s in the CUDA\n", w);
            return 1;
        }
        std::printf("  %s\n", w);
    }

    // ---- 4. The machine code: NVRTC's cubin for sm_80, read back with
    // nvdisasm where it is installed. HMMA is the tensor-core multiply,
    // LDSM ldmatrix, LDGSTS cp.async; no LDL/STL means no spills.
    std::printf("\n3. the SASS\n");
    // A name of this run's own: the lesson's two tests may run at once.
    const std::string files = "lesson_14_gemm_" + std::to_string(getpid());
    try {
        Pipeline(C).compile_to_cuda(files, sch, gpu);
        const std::string nvdisasm = find_nvdisasm();
        if (nvdisasm.empty()) {
            std::printf("  (no nvdisasm: pip install nvidia-cuda-nvdisasm to see it)\n");
        } else {
            std::map<std::string, int> count;
            if (FILE *f = popen((nvdisasm + " " + files + ".cubin").c_str(), "r")) {
                char line[1024];
                while (fgets(line, sizeof line, f)) {
                    for (const char *op : {"HMMA", "LDSM", "LDGSTS", "LDL", "STL"}) {
                        count[op] +=
                            std::string(line).find(std::string(op) + ".") != std::string::npos ||
                            std::string(line).find(std::string(op) + " ") != std::string::npos;
                    }
                }
                pclose(f);
            }
            for (const auto &[op, n] : count) std::printf("  %-7s %d\n", op.c_str(), n);
            if (count["HMMA"] == 0 || count["LDSM"] == 0 || count["LDGSTS"] == 0) return 1;
        }
    } catch (const CompileError &e) {
        std::printf("  (skipped: %s)\n", e.what());
    }
    for (const char *suffix : {".cu", ".ptx", ".cubin"}) {
        std::remove((files + suffix).c_str());
    }

    // ---- 5. Running it. Sizes need not be multiples of the tiles: the
    // copies and the store are masked at the edges.
    const int M = 100, N = 90, K = 70;
    Buffer<float16_t> a({M, K}), b({K, N});
    for (int x = 0; x < M; x++) {
        for (int r = 0; r < K; r++) a(x, r) = float16_t(float((x * 7 + r * 3) % 11 - 5) / 8);
    }
    for (int r = 0; r < K; r++) {
        for (int y = 0; y < N; y++) b(r, y) = float16_t(float((r * 5 + y) % 9 - 4) / 8);
    }
    A.set(a);
    B.set(b);
    auto check = [&](const RawBuffer &raw, const char *where) {
        Buffer<float> c(raw);
        for (int x = 0; x < M; x++) {
            for (int y = 0; y < N; y++) {
                double want = 0;
                for (int r = 0; r < K; r++) want += double(float(a(x, r))) * double(float(b(r, y)));
                want = std::max(want * 0.5, 0.0);
                if (std::fabs(c(x, y) - want) > 1e-3) {
                    std::printf("%s: C(%d, %d) = %g, want %g\n", where, x, y, c(x, y), want);
                    return false;
                }
            }
        }
        std::printf("  %s: C equals the float64 product\n", where);
        return true;
    };
    std::printf("\n4. running it\n");
    // The same schedule on the CPU: the program becomes vectorized loops.
    if (!check(Pipeline(C).realize({M, N}, sch, Target("host")), "CPU")) return 1;

    // ---- 6. More than an elementwise epilogue: a softmax along each row
    // of the product, in the same program. The rows' maxima and sums are
    // Funcs of i alone, reduced over the columns; in the tile program they
    // are 1-D tiles, reduced along the tile's columns where the
    // accumulator's registers hold them (each thread its registers, then
    // the four lanes of a quad by shuffles, then the two warps of a row
    // through shared memory), and broadcast back from the same registers.
    // A reduction fits in one tile: here the 90 columns in tiles of 128.
    RDom col(0, N, "col");
    Func rmax("rmax"), e("e"), rsum("rsum"), P("P");
    rmax(i) = Expr(-INFINITY);
    rmax(i) = max(rmax(i), acc(i, col));
    e(i, j) = exp(acc(i, j) - rmax(i));
    rsum(i) = 0.0f;
    rsum(i) += e(i, col);
    P(i, j) = e(i, j) / rsum(i);
    Schedule soft;
    soft[P].tile_program(i, j, io, jo, 32, 128, TileOptions().warps(1, 2).reduction_tile(32));
    for (Func f : {acc, rmax, e, rsum}) soft[f].compute_at(P, jo);
    soft[acc].update().tensorize("mma.m16n8k16");
    std::printf("\n5. a row softmax in the program: its reductions and broadcasts\n");
    std::istringstream program(Pipeline(P).compile_to_lowered_stmt(soft, gpu));
    for (std::string line; std::getline(program, line);) {
        if (line.find("reduce.") != std::string::npos ||
            line.find("= broadcast") != std::string::npos) {
            std::printf("%s\n", line.c_str());
        }
    }
    Buffer<float> p(Pipeline(P).realize({M, N}, soft, Target("host")));
    for (int x = 0; x < M; x++) {
        double row_max = -INFINITY, sum = 0;
        std::vector<double> logit(N);
        for (int y = 0; y < N; y++) {
            for (int r = 0; r < K; r++) logit[y] += double(float(a(x, r))) * double(float(b(r, y)));
            row_max = std::max(row_max, logit[y]);
        }
        for (int y = 0; y < N; y++) sum += std::exp(logit[y] - row_max);
        for (int y = 0; y < N; y++) {
            const double want = std::exp(logit[y] - row_max) / sum;
            if (std::fabs(p(x, y) - want) > 1e-5) {
                std::printf("P(%d, %d) = %g, want %g\n", x, y, p(x, y), want);
                return 1;
            }
        }
    }
    std::printf("  CPU: P equals the float64 softmax\n");

    int32_t capability = 0;
    if (loom_cuda_device_capability(0, &capability) != 0) {
        std::printf("  (GPU skipped: %s)\n", loom_last_error_message());
        return 0;
    }
    if (!check(Pipeline(C).realize({M, N}, sch, Target("host-cuda")), "GPU")) return 1;
    Buffer<float> pg(Pipeline(P).realize({M, N}, soft, Target("host-cuda")));
    for (int x = 0; x < M; x++) {
        for (int y = 0; y < N; y++) {
            if (std::fabs(pg(x, y) - p(x, y)) > 1e-5) {
                std::printf("GPU: P(%d, %d) = %g, the CPU's %g\n", x, y, pg(x, y), p(x, y));
                return 1;
            }
        }
    }
    std::printf("  GPU: P equals the CPU's\n");
    return 0;
}
