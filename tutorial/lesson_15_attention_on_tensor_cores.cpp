// Lesson 15: the attention of lesson 10, now on tensor cores.
//
// Lesson 10 wrote attention as a plain chain of reductions over the keys
// (the scores' row max m, the sum l of exponentials, the weighted sum o of
// the values) and asked rolling_update(o, r) for FlashAttention's one pass,
// the compiler deriving the rescaling. Lesson 14 made a matrix product a
// tile program on tensor cores. Here the two meet: the same plain chain,
// with the scores' product written as a reduction over the head dimension,
// becomes ONE tile program per block of queries, which
//
//   - computes S = Q K^T for a tile of keys on mma.sync (tensorize),
//   - reduces each row's max and sum inside the accumulator's registers
//     (the four lanes of a quad by shuffles),
//   - turns P = exp(S - m) into half precision in registers and feeds it,
//     as it lies, to the second mma.sync, P V,
//   - repairs l and o with the factor the compiler derives,
//
// the keys and values staged through shared memory by cp.async. Nothing in
// the compiler knows this is attention. No GPU is needed: the kernel runs
// on the stand-in where there is none, and NVRTC compiles it for the SASS.
#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include <loom/loom.h>

using namespace loom;

int main() {
    // ---- 1. The algorithm, as in lesson 10, in half precision: the
    // scores' product as a named reduction (so that a schedule can put it
    // on tensor cores), then the chain.
    BufferParam Q(Float(16), 2, "Q"), K(Float(16), 2, "K"), V(Float(16), 2, "V");
    Var i("i"), j("j"), d("d");
    RDom e(0, Q.dim(1).extent(), "e"), r(0, K.dim(0).extent(), "r");
    Func qk("qk"), m("m"), l("l"), o("o"), out("out");
    qk(i, j) = 0.0f;
    qk(i, j) += cast<float>(Q(i, e)) * cast<float>(K(j, e));
    const float scale = 0.125f;                                  // 1 / sqrt(64)
    Expr s = select(r <= i, qk(i, r) * scale, Expr(-INFINITY));  // causal
    m(i) = Expr(-INFINITY);
    m(i) = max(m(i), s);
    l(i) = 0.0f;
    l(i) += exp(s - m(i));
    o(i, d) = 0.0f;
    o(i, d) += exp(s - m(i)) * cast<float>(V(r, d));
    out(i, d) = o(i, d) / l(i);

    // ---- 2. The schedule. out is a tile program of 64 queries by the
    // whole head (64), 4 warps each owning 16 rows. rolling_update(o, r)
    // inside a tile program rolls the chain over tiles of 64 keys: one loop
    // of the program. The scores' product runs on mma.sync as it is; P V
    // needs P in half precision, which the schedule allows explicitly
    // (RoundOperands: a relative error of 2^-11 per weight, what
    // FlashAttention does too).
    Var io("io"), dout("dout");
    RVar ro("ro"), ri("ri");
    Schedule sch;
    sch[out].tile_program(i, d, io, dout, 64, 64,
                          TileOptions().warps(4, 1).reduction_tile(64).pipeline_stages(2));
    sch.rolling_update(o, r)
        .split(r, ro, ri, 64)
        .tensorize("mma.m16n8k16", TensorizeRounding::RoundOperands);
    sch[o].compute_at(out, dout);
    sch[qk].compute_at(out, dout).update().tensorize("mma.m16n8k16");

    // ---- 3. The tile program: each value with its type and layout. Look
    // for the key loop (o_rt), the two dots, the reductions into
    // #slice(mma_accumulator) (a row's values, held by its quad), and the
    // repair factor: one exp per row, broadcast over o and applied to l.
    const Target gpu("host-cuda-sm_80");
    const std::string lowered = Pipeline(out).compile_to_lowered_stmt(sch, gpu);
    std::printf("1. the derived repairs\n");
    std::istringstream lines(lowered);
    for (std::string line; std::getline(lines, line);) {
        const size_t repair = line.find("repair h(");
        if (repair != std::string::npos) {
            const std::string member = line.substr(line.find("): ") + 3);
            std::printf("  %s: %s\n", member.substr(0, member.find(' ')).c_str(),
                        line.substr(repair, line.find(" (", repair) - repair).c_str());
        }
    }
    std::printf("\n2. the key loop of the tile program\n");
    const size_t loop = lowered.find("for o_rt");
    if (loop == std::string::npos) {
        std::printf("expected the program's key loop\n");
        return 1;
    }
    std::istringstream program(lowered.substr(loop, lowered.find("\n      %l_", loop) - loop));
    for (std::string line; std::getline(program, line);) {
        if (line.find("dot.") != std::string::npos || line.find("reduce.") != std::string::npos ||
            line.find("exp_f32") != std::string::npos ||
            line.find("for o_rt") != std::string::npos) {
            std::printf("%s\n", line.substr(0, 150).c_str());
        }
    }

    // ---- 4. The machine code, where nvdisasm is installed: both products
    // on tensor cores (HMMA), ldmatrix (LDSM), cp.async (LDGSTS), shuffles
    // for the rows (SHFL), exponentials (MUFU.EX2), no spills (LDL, STL).
    // Counted over the whole kernel, whose loops come in versions for
    // aligned and unaligned rows; per key tile each thread takes one
    // exponential per score it holds, and one per row for the repair
    // (test/cuda_runtime/attention_template_sass_test.cpp).
    std::printf("\n3. the SASS\n");
    // A name of this run's own: the lesson's two tests may run at once.
    const std::string files = "lesson_15_attention_" + std::to_string(getpid());
    try {
        Pipeline(out).compile_to_cuda(files, sch, gpu);
        std::map<std::string, int> count;
        const char *probe =
            "python3 -c \"import glob, nvidia; print((glob.glob(nvidia.__path__[0] + "
            "'/cu*/bin/nvdisasm') + [''])[0])\" 2>/dev/null";
        std::string nvdisasm;
        if (FILE *f = popen(probe, "r")) {
            char buf[512];
            while (fgets(buf, sizeof buf, f)) nvdisasm += buf;
            pclose(f);
        }
        nvdisasm = nvdisasm.substr(0, nvdisasm.find('\n'));
        if (nvdisasm.empty()) {
            std::printf("  (no nvdisasm: pip install nvidia-cuda-nvdisasm to see it)\n");
        } else if (FILE *f = popen((nvdisasm + " " + files + ".cubin").c_str(), "r")) {
            char text[1024];
            while (fgets(text, sizeof text, f)) {
                for (const char *op :
                     {"HMMA", "LDSM", "LDGSTS", "SHFL", "MUFU.EX2", "LDL", "STL"}) {
                    count[op] += std::string(text).find(std::string(" ") + op) != std::string::npos;
                }
            }
            pclose(f);
            for (const auto &[op, n] : count) std::printf("  %-9s %d\n", op.c_str(), n);
            if (count["HMMA"] == 0 || count["LDL"] != 0) return 1;
        }
    } catch (const CompileError &e) {
        std::printf("  (skipped: %s)\n", e.what());
    }
    for (const char *suffix : {".cu", ".ptx", ".cubin"}) {
        std::remove((files + suffix).c_str());
    }

    // ---- 5. Running it: on the CPU, then on a GPU, or on the stand-in
    // driver where the tests point LOOM_CUDA_DRIVER at it; against a
    // float64 softmax.
    const int Lq = 100, Lk = 100, D = 64;
    Buffer<float16_t> q({Lq, D}), k({Lk, D}), v({Lk, D});
    for (int x = 0; x < Lq; x++) {
        for (int c = 0; c < D; c++) {
            q(x, c) = float16_t(float((x * 7 + c * 3) % 13 - 6) / 8);
            k(x, c) = float16_t(float((x * 5 + c) % 11 - 5) / 8);
            v(x, c) = float16_t(float((x * 3 + c * 7) % 9 - 4) / 8);
        }
    }
    Q.set(q);
    K.set(k);
    V.set(v);
    // The largest difference of an output from the float64 softmax.
    auto error_of = [&](const Buffer<float> &got) {
        double worst = 0;
        for (int x = 0; x < Lq; x++) {
            std::vector<double> sc(Lk, -INFINITY);
            double mx = -INFINITY, sum = 0;
            for (int y = 0; y <= x; y++) {
                double dot = 0;
                for (int c = 0; c < D; c++) dot += double(float(q(x, c))) * double(float(k(y, c)));
                sc[y] = dot * scale;
                mx = std::max(mx, sc[y]);
            }
            for (int y = 0; y < Lk; y++) sum += std::exp(sc[y] - mx);
            for (int c = 0; c < D; c++) {
                double want = 0;
                for (int y = 0; y < Lk; y++) want += std::exp(sc[y] - mx) * double(float(v(y, c)));
                worst = std::max(worst, std::abs(got(x, c) - want / sum));
            }
        }
        return worst;
    };

    // The same tile program runs on the CPU: drop the two tensorize
    // directives and compile for the host. The program becomes loops, its
    // dots register-blocked in vector registers, its row reductions vector
    // reductions, P stays in float32. (schedules::flash_attention with
    // head_dim set schedules apps/attention's variants this way: on 2 cores
    // it runs ahead of PyTorch's CPU attention for causal masks.)
    std::printf("\n4. the same program on the CPU\n");
    Schedule cpu;
    cpu[out].tile_program(i, d, io, dout, 64, 64, TileOptions().reduction_tile(64));
    cpu.rolling_update(o, r).split(r, ro, ri, 64);
    cpu[o].compute_at(out, dout);
    cpu[qk].compute_at(out, dout);
    const double cpu_error = error_of(Buffer<float>(Pipeline(out).realize({Lq, D}, cpu)));
    std::printf("  largest difference from float64: %.2g (all in float32: < 1e-5)\n", cpu_error);
    if (!(cpu_error < 1e-5)) return 1;

    // ---- 6. split_k over tile programs (FlashDecoding). With few queries
    // (decode: one) a program per block of queries leaves the GPU idle;
    // split_k(o, r, 4, chunk) cuts the keys into 4 chunks instead, and the
    // Stage it returns, the partial of o per chunk, is made the tile
    // program: one per chunk and tile of queries, rolling its chunk's key
    // tiles exactly as above and storing its partial max, sum and weighted
    // sum (m_partial, l_partial, o_partial, Funcs at root). A second kernel
    // combines the chunks with the same derived repairs: here a block per
    // query, a thread per element of the head. (schedules::
    // flash_decoding_tensor_cores is this schedule for apps/attention.)
    std::printf("\n5. split_k over tile programs\n");
    out.output_buffer().dim(1).set_extent(D);
    Var chunk("chunk");
    Schedule split;
    Stage partial = split.split_k(o, r, 4, chunk);
    partial
        .tile_program(i, d, io, dout, 16, 64,
                      TileOptions().warps(1, 1).reduction_tile(64).pipeline_stages(2))
        .split(r, ro, ri, 64)
        .tensorize("mma.m16n8k16", TensorizeRounding::RoundOperands)
        .compute_root();
    split[qk].compute_at(partial, dout).update().tensorize("mma.m16n8k16");
    split[out].gpu_blocks(i).gpu_threads(d);
    split[o].compute_at(out, d);
    const std::string split_lowered = Pipeline(out).compile_to_lowered_stmt(split, gpu);
    std::istringstream split_lines(split_lowered);
    for (std::string line; std::getline(split_lines, line);) {
        const size_t at = line.find_first_not_of(' ');
        if (line.find("each chunk rolled") != std::string::npos) {
            std::printf("  %s\n", line.substr(line.find(": ") + 2).c_str());
        } else if (line.compare(at, 6, "store ") == 0) {
            std::printf("  the program stores %s\n",
                        line.substr(at + 6, line.find('[') - at - 6).c_str());
        }
    }
    // The same on the CPU, without the GPU directives.
    Schedule split_cpu;
    Stage cpu_partial = split_cpu.split_k(o, r, 4, chunk);
    cpu_partial.tile_program(i, d, io, dout, 16, 64, TileOptions().reduction_tile(64))
        .split(r, ro, ri, 64)
        .compute_root();
    split_cpu[qk].compute_at(cpu_partial, dout);
    split_cpu[o].compute_root();
    const double split_error = error_of(Buffer<float>(Pipeline(out).realize({Lq, D}, split_cpu)));
    std::printf("  on the CPU, largest difference from float64: %.2g (< 1e-5)\n", split_error);
    if (!(split_error < 1e-5)) return 1;

    // ---- 7. Grouped-query attention in decode: Hq query heads share Hkv
    // key heads, query head h reading key head h / G. One program per head
    // and chunk would load each key tile once per query head; group_rows()
    // puts the heads that read one key head in a tile's rows instead. The
    // compiler finds the group from how K and V are read (at h / G: groups
    // of G; at h: groups of one), so the schedule does not say G, and each
    // program loads its key and value tiles once for its G heads.
    std::printf("\n6. grouped-query decode: a key head's query heads in one tile\n");
    BufferParam Qg(Float(16), 3, "Qg"), Kg(Float(16), 3, "Kg"), Vg(Float(16), 3, "Vg");
    Var h("h"), ho("ho");
    const Expr group = max(Qg.dim(0).extent() / Kg.dim(0).extent(), 1);
    RDom eg(0, Qg.dim(2).extent(), "eg"), rg(0, Kg.dim(1).extent(), "rg");
    Func qkg("qkg"), mg("mg"), lg("lg"), og("og"), outg("outg");
    qkg(h, i, j) = 0.0f;
    qkg(h, i, j) += cast<float>(Qg(h, i, eg)) * cast<float>(Kg(h / group, j, eg));
    const Expr sg = qkg(h, i, rg) * scale;  // the one query sees every key
    mg(h, i) = Expr(-INFINITY);
    mg(h, i) = max(mg(h, i), sg);
    lg(h, i) = 0.0f;
    lg(h, i) += exp(sg - mg(h, i));
    og(h, i, d) = 0.0f;
    og(h, i, d) += exp(sg - mg(h, i)) * cast<float>(Vg(h / group, rg, d));
    outg(h, i, d) = og(h, i, d) / lg(h, i);
    outg.output_buffer().dim(2).set_extent(D);
    auto grouped_schedule = [&](bool on_gpu) {
        Schedule g;
        Stage gp = g.split_k(og, rg, 4, chunk);
        gp.tile_program(
              h, d, ho, dout, 16, 64,
              TileOptions().warps(1, 1).reduction_tile(64).pipeline_stages(2).group_rows())
            .split(rg, ro, ri, 64)
            .compute_root();
        if (on_gpu) {
            gp.tensorize("mma.m16n8k16", TensorizeRounding::RoundOperands);
            g[qkg].compute_at(gp, dout).update().tensorize("mma.m16n8k16");
            g[outg].gpu_blocks(i, h).gpu_threads(d);
            g[og].compute_at(outg, d);
        } else {
            g[qkg].compute_at(gp, dout);
            g[og].compute_root();
        }
        return g;
    };
    const Schedule grouped = grouped_schedule(true);
    const std::string grouped_lowered = Pipeline(outg).compile_to_lowered_stmt(grouped, gpu);
    const size_t bound = grouped_lowered.find("row_group = ");
    if (bound == std::string::npos) {
        std::printf("expected the program's group of rows\n");
        return 1;
    }
    size_t end = bound;  // the binding ends at the first comma outside parentheses
    for (int depth = 0; end < grouped_lowered.size(); end++) {
        const char ch = grouped_lowered[end];
        depth += ch == '(' ? 1 : ch == ')' ? -1 : 0;
        if (depth == 0 && (ch == ',' || ch == ' ') && end > bound + 12) break;
    }
    std::printf("  the group, from K's and V's index h / G: %s\n",
                grouped_lowered.substr(bound, end - bound).c_str());
    // 8 query heads over 2 key heads (groups of 4), one query, 300 keys.
    const int Hq = 8, Hkv = 2, Lg = 300;
    Buffer<float16_t> qg({Hq, 1, D}), kg({Hkv, Lg, D}), vg({Hkv, Lg, D});
    for (int y = 0; y < Lg; y++) {
        for (int c = 0; c < D; c++) {
            for (int x = 0; x < Hkv; x++) {
                kg(x, y, c) = float16_t(float((x * 3 + y * 5 + c) % 11 - 5) / 8);
                vg(x, y, c) = float16_t(float((x + y * 3 + c * 7) % 9 - 4) / 8);
            }
        }
    }
    for (int x = 0; x < Hq; x++) {
        for (int c = 0; c < D; c++) qg(x, 0, c) = float16_t(float((x * 7 + c * 3) % 13 - 6) / 8);
    }
    Qg.set(qg);
    Kg.set(kg);
    Vg.set(vg);
    auto grouped_error = [&](const Buffer<float> &got) {
        double worst = 0;
        for (int x = 0; x < Hq; x++) {
            const int xk = x / (Hq / Hkv);
            std::vector<double> sc(Lg);
            double mx = -INFINITY, sum = 0;
            for (int y = 0; y < Lg; y++) {
                double dot = 0;
                for (int c = 0; c < D; c++) {
                    dot += double(float(qg(x, 0, c))) * double(float(kg(xk, y, c)));
                }
                sc[y] = dot * scale;
                mx = std::max(mx, sc[y]);
            }
            for (int y = 0; y < Lg; y++) sum += std::exp(sc[y] - mx);
            for (int c = 0; c < D; c++) {
                double want = 0;
                for (int y = 0; y < Lg; y++)
                    want += std::exp(sc[y] - mx) * double(float(vg(xk, y, c)));
                worst = std::max(worst, std::abs(got(x, 0, c) - want / sum));
            }
        }
        return worst;
    };
    const double grouped_cpu =
        grouped_error(Buffer<float>(Pipeline(outg).realize({Hq, 1, D}, grouped_schedule(false))));
    std::printf("  on the CPU, largest difference from float64: %.2g (< 1e-5)\n", grouped_cpu);
    if (!(grouped_cpu < 1e-5)) return 1;

    std::printf("\n7. running them on the GPU\n");
    int32_t capability = 0;
    if (loom_cuda_device_capability(0, &capability) != 0) {
        std::printf("  (GPU skipped: %s)\n", loom_last_error_message());
        return 0;
    }
    const double worst =
        error_of(Buffer<float>(Pipeline(out).realize({Lq, D}, sch, Target("host-cuda"))));
    std::printf("  largest difference from float64: %.2g (P in half precision: < 1e-3)\n", worst);
    if (!(worst < 1e-3)) return 1;
    const double split_worst =
        error_of(Buffer<float>(Pipeline(out).realize({Lq, D}, split, Target("host-cuda"))));
    std::printf("  split_k: largest difference from float64: %.2g (< 1e-3)\n", split_worst);
    if (!(split_worst < 1e-3)) return 1;
    const double grouped_worst = grouped_error(
        Buffer<float>(Pipeline(outg).realize({Hq, 1, D}, grouped, Target("host-cuda"))));
    std::printf("  grouped rows: largest difference from float64: %.2g (< 1e-3)\n", grouped_worst);
    if (!(grouped_worst < 1e-3)) return 1;
    std::printf("  GPU: attention equals the float64 softmax\n");
    return 0;
}
