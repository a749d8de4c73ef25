// PyTorch's scaled_dot_product_attention on the CPU as a peer in the
// apps' demos and benchmarks, measured in the same run: python3 reads the
// inputs and Loom's output from raw float32 files, times SDPA on them
// (median of reps, after a warm-up, on `threads` threads) and prints its
// time and its largest difference from Loom's output. Without python3 or
// torch, the result says why and nothing is timed.
#pragma once

#include <stdlib.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>

#include <loom/loom.h>

namespace apps {

struct TorchResult {
    bool ran = false;
    std::string note;  // why not, or torch's version
    int threads = 0;
    double seconds = 0, max_diff = 0;
};

namespace detail {

inline const char *torch_sdpa_script() {
    return R"(
import sys, time
try:
    import torch
    import torch.nn.functional as F
except ImportError:
    print("no torch"); sys.exit(0)
d, threads, H, Sq, Sk, D, causal, reps = sys.argv[1], *map(int, sys.argv[2:])
torch.set_num_threads(threads)
def load(name, S):
    return torch.from_file(d + "/" + name, size=H * S * D, dtype=torch.float32).view(1, H, S, D)
q, k, v, loom = load("q", Sq), load("k", Sk), load("v", Sk), load("out", Sq)
# is_causal aligns the mask to the top left; Loom's variants align the last
# query with the last key, the same when Sq == Sk.
sdpa = lambda: F.scaled_dot_product_attention(q, k, v, is_causal=bool(causal))
with torch.inference_mode():
    out = sdpa()
    ts = []
    for _ in range(reps):
        t0 = time.perf_counter(); sdpa(); ts.append(time.perf_counter() - t0)
ts.sort()
print("torch", torch.__version__, torch.get_num_threads(), ts[len(ts) // 2],
      (out - loom).abs().max().item())
)";
}

inline void write_raw(const std::string &path, const loom::Buffer<float> &b) {
    std::ofstream(path, std::ios::binary)
        .write(reinterpret_cast<const char *>(b.data()),
               static_cast<std::streamsize>(b.number_of_elements() * sizeof(float)));
}

}  // namespace detail

/** Times SDPA on q, k, v ([1, H, S, D], dense; causal needs Sq == Sk) and
 * compares it with Loom's `out`; the default scale 1/sqrt(D) is the one the
 * inputs must have been computed with. */
inline TorchResult time_torch_sdpa(const loom::Buffer<float> &q, const loom::Buffer<float> &k,
                                   const loom::Buffer<float> &v, const loom::Buffer<float> &out,
                                   bool causal, int threads, int reps) {
    TorchResult r;
    std::string tmpl = (std::filesystem::temp_directory_path() / "loom_sdpa_XXXXXX").string();
    if (!mkdtemp(tmpl.data())) {
        r.note = "no temporary directory";
        return r;
    }
    const std::string d = tmpl;
    detail::write_raw(d + "/q", q);
    detail::write_raw(d + "/k", k);
    detail::write_raw(d + "/v", v);
    detail::write_raw(d + "/out", out);
    std::ofstream(d + "/sdpa.py") << detail::torch_sdpa_script();
    const std::vector<int> qs = q.shape(), ks = k.shape();
    const std::string cmd = "python3 '" + d + "/sdpa.py' '" + d + "' " + std::to_string(threads) +
                            " " + std::to_string(qs[1]) + " " + std::to_string(qs[2]) + " " +
                            std::to_string(ks[2]) + " " + std::to_string(qs[3]) + " " +
                            (causal ? "1 " : "0 ") + std::to_string(reps) + " 2>&1";
    // The script's answer is its line starting with "torch " or "no torch";
    // anything else it printed (warnings, a traceback) is kept for the note.
    std::string answer, last;
    if (FILE *f = popen(cmd.c_str(), "r")) {
        char line[1024];
        while (std::fgets(line, sizeof line, f)) {
            std::string l(line);
            if (!l.empty() && l.back() == '\n') l.pop_back();
            if (l.rfind("torch ", 0) == 0 || l == "no torch") answer = l;
            else if (!l.empty()) last = l;
        }
        pclose(f);
    }
    std::filesystem::remove_all(d);
    char version[64] = {0};
    if (std::sscanf(answer.c_str(), "torch %63s %d %lf %lf", version, &r.threads, &r.seconds,
                    &r.max_diff) == 4) {
        r.ran = true;
        r.note = version;
    } else if (answer == "no torch") {
        r.note = "python3 cannot import torch";
    } else {
        r.note = "python3 failed: " + last;
    }
    return r;
}

}  // namespace apps
