// The machine code (SASS) of a cubin, for tests that check which
// instructions a kernel issues without a GPU: nvdisasm from the CUDA
// toolkit or PyPI's nvidia-cuda-nvdisasm.
#pragma once

#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <map>
#include <sstream>
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

/** The loops of each kernel in nvdisasm's output (a backward branch to a
 * label, as scripts/sass_loops.py finds them): each loop's instructions,
 * opcodes without their predicates. */
inline std::vector<std::vector<std::string>> sass_loops(const std::string &sass) {
    std::vector<std::vector<std::string>> loops;
    std::map<std::string, size_t> labels;
    std::vector<std::string> code;
    auto finish = [&]() {
        for (size_t i = 0; i < code.size(); i++) {
            const size_t bra = code[i].find("BRA `(");
            if (bra == std::string::npos) continue;
            const size_t from = bra + 6, to = code[i].find(')', from);
            auto label = labels.find(code[i].substr(from, to - from));
            if (label == labels.end() || label->second > i) continue;
            std::vector<std::string> body;
            for (size_t j = label->second; j <= i; j++) {
                std::istringstream words(code[j]);
                std::string op;
                words >> op;
                if (!op.empty() && op[0] == '@') words >> op;
                body.push_back(op);
            }
            loops.push_back(body);
        }
        labels.clear();
        code.clear();
    };
    std::istringstream lines(sass);
    for (std::string line; std::getline(lines, line);) {
        const size_t text = line.find(".text.");
        if (text != std::string::npos && line.find(':') != std::string::npos &&
            line.find("/*") == std::string::npos) {
            finish();
            continue;
        }
        if (line.compare(0, 5, ".L_x_") == 0) {
            labels[line.substr(0, line.find(':'))] = code.size();
            continue;
        }
        const size_t open = line.find("/*"), close = line.find("*/");
        const size_t semi = line.find(';');
        if (open == std::string::npos || close == std::string::npos || semi == std::string::npos ||
            close > semi || close - open != 6) {
            continue;
        }
        code.push_back(line.substr(close + 2, semi - close - 2));
    }
    finish();
    return loops;
}

}  // namespace loom_test
