// The machine code (SASS) of a cubin, for tests that check which
// instructions a kernel issues without a GPU: nvdisasm from the CUDA
// toolkit or PyPI's nvidia-cuda-nvdisasm.
#pragma once

#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string>
#include <vector>

namespace loom_test {

/** nvdisasm: $NVDISASM, on the PATH, or from the pip package
 * nvidia-cuda-nvdisasm; empty if none. */
inline std::string find_nvdisasm() {
    if (const char *p = getenv("NVDISASM"); p && *p) return p;
    const char *probe =
        "command -v nvdisasm 2>/dev/null || python3 -c \"import glob, nvidia; "
        "print((glob.glob(nvidia.__path__[0] + '/cu*/bin/nvdisasm') + [''])[0])\" 2>/dev/null";
    std::string out;
    if (FILE *f = popen(probe, "r")) {
        char buf[512];
        while (fgets(buf, sizeof buf, f)) out += buf;
        pclose(f);
    }
    while (!out.empty() && (out.back() == '\n' || out.back() == ' ')) out.pop_back();
    return out.substr(0, out.find('\n'));
}

/** The SASS of a cubin, by nvdisasm. */
inline std::string sass_of(const std::vector<char> &cubin, const std::string &nvdisasm) {
    char path[] = "/tmp/loom_mma_XXXXXX";
    const int fd = mkstemp(path);
    if (fd < 0) return "";
    close(fd);
    std::ofstream(path, std::ios::binary).write(cubin.data(), cubin.size());
    std::string out;
    if (FILE *f = popen((nvdisasm + " " + path + " 2>&1").c_str(), "r")) {
        char buf[4096];
        size_t n;
        while ((n = fread(buf, 1, sizeof buf, f)) > 0) out.append(buf, n);
        pclose(f);
    }
    unlink(path);
    return out;
}

}  // namespace loom_test
