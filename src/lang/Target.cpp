// Parsing, printing and host detection of compilation targets.
#include "loom/Target.h"

#include <llvm/ADT/StringMap.h>
#include <llvm/Support/Host.h>

#include <algorithm>
#include <iterator>
#include <sstream>

#include "loom/Error.h"

namespace loom {

namespace {

struct FeatureName {
    Target::Feature feature;
    const char *name;
};

// In the order to_string() prints them.
const FeatureName feature_names[] = {
    {Target::SSE41, "sse41"},
    {Target::AVX, "avx"},
    {Target::AVX2, "avx2"},
    {Target::FMA, "fma"},
    {Target::F16C, "f16c"},
    {Target::AVX512, "avx512"},
    {Target::NoAsserts, "no_asserts"},
    {Target::Debug, "debug"},
    {Target::FastMath, "fast_math"},
    {Target::LLVMLoopOpt, "llvm_loop_opt"},
    {Target::CUDA, "cuda"},
    {Target::CUDASource, "cuda_source"},
};

// The GPU capabilities Loom generates code for (major * 10 + minor).
const int cuda_capabilities[] = {80, 86, 89, 90};

// Features that come with another: every AVX2 machine has AVX, SSE4.1, FMA
// and F16C (x86-64-v3), and our AVX-512 means x86-64-v4 (F, VL, BW, DQ, CD).
unsigned with_implied(unsigned f) {
    auto bit = [](Target::Feature x) { return 1u << x; };
    if (f & bit(Target::AVX512)) f |= bit(Target::AVX2);
    if (f & bit(Target::CUDASource)) f |= bit(Target::CUDA);
    if (f & bit(Target::AVX2)) f |= bit(Target::AVX) | bit(Target::FMA) | bit(Target::F16C);
    if (f & bit(Target::AVX)) f |= bit(Target::SSE41);
    return f;
}

std::vector<std::string> split(const std::string &s, char sep) {
    std::vector<std::string> out;
    std::string cur;
    for (char c : s) {
        if (c == sep) {
            out.push_back(cur);
            cur.clear();
        } else {
            cur += c;
        }
    }
    out.push_back(cur);
    return out;
}

// The host does not change while we run: ask the CPU once (the query costs
// more than lowering a small pipeline, and every compile asks).
unsigned query_host_features() {
    llvm::StringMap<bool> f;
    unsigned bits = 0;
    if (!llvm::sys::getHostCPUFeatures(f)) return bits;
    auto has = [&](const char *n) {
        auto it = f.find(n);
        return it != f.end() && it->second;
    };
    if (has("sse4.1")) bits |= 1u << Target::SSE41;
    if (has("avx")) bits |= 1u << Target::AVX;
    if (has("avx2") && has("avx")) bits |= 1u << Target::AVX2;
    if (has("fma")) bits |= 1u << Target::FMA;
    if (has("f16c")) bits |= 1u << Target::F16C;
    if (has("avx512f") && has("avx512vl") && has("avx512bw") && has("avx512dq") &&
        has("avx512cd")) {
        bits |= 1u << Target::AVX512;
    }
    // AVX2 without FMA or F16C does not exist in practice; if it did, our
    // AVX2 target (which implies both) could not run there.
    if ((bits & (1u << Target::AVX2)) &&
        !((bits & (1u << Target::FMA)) && (bits & (1u << Target::F16C)))) {
        bits &= ~((1u << Target::AVX2) | (1u << Target::AVX512));
    }
    return bits;
}

unsigned host_features() {
    static const unsigned bits = query_host_features();
    return bits;
}

}  // namespace

Target::Target(const std::string &s) {
    std::vector<std::string> tok = split(s, '-');
    size_t i = 0;
    if (tok.empty() || tok[0].empty()) {
        user_error << "Target string \"" << s
                   << "\" is empty. Use \"host\" or e.g. \"x86-64-linux-avx2\".";
    }
    if (tok[0] == "host") {
        *this = host();
        i = 1;
    } else {
        if (!(tok.size() >= 3 && tok[0] == "x86" && tok[1] == "64")) {
            user_error << "Target string \"" << s
                       << "\" does not start with \"host\" or a known architecture (\"x86-64\").";
        }
        arch = X86_64;
        if (tok[2] != "linux") {
            user_error << "Target string \"" << s << "\" names the OS \"" << tok[2]
                       << "\"; the only supported OS is \"linux\".";
        }
        os = Linux;
        features = 0;
        i = 3;
    }
    for (; i < tok.size(); i++) {
        if (tok[i].compare(0, 3, "sm_") == 0) {
            std::string digits = tok[i].substr(3);
            bool specific = !digits.empty() && digits.back() == 'a';
            if (specific) digits.pop_back();
            int cap = 0;
            bool known = !digits.empty() && digits.size() <= 3 &&
                         digits.find_first_not_of("0123456789") == std::string::npos;
            if (known) {
                cap = std::stoi(digits);
                known = std::find(std::begin(cuda_capabilities), std::end(cuda_capabilities),
                                  cap) != std::end(cuda_capabilities) &&
                        (!specific || cap == 90);
            }
            if (!known) {
                user_error << "Unknown GPU capability \"" << tok[i] << "\" in target string \"" << s
                           << "\". Known: sm_80, sm_86, sm_89, sm_90, sm_90a.";
            }
            cuda_capability_ = cap;
            cuda_arch_specific_ = specific;
            features |= 1u << CUDA;
            continue;
        }
        bool found = false;
        for (const auto &fn : feature_names) {
            if (tok[i] == fn.name) {
                features |= 1u << fn.feature;
                found = true;
            }
        }
        if (!found) {
            std::string valid;
            for (const auto &fn : feature_names) valid += std::string(" ") + fn.name;
            user_error << "Unknown feature \"" << tok[i] << "\" in target string \"" << s
                       << "\". Known features:" << valid << ", and a GPU capability (sm_80, "
                       << "sm_86, sm_89, sm_90, sm_90a).";
        }
    }
    features = with_implied(features);
}

Target Target::host() {
    Target t("x86-64-linux");
    t.features = with_implied(host_features());
    return t;
}

Target Target::with_feature(Feature f) const {
    Target t = *this;
    t.features = with_implied(t.features | (1u << f));
    return t;
}

Target Target::without_feature(Feature f) const {
    Target t = *this;
    t.features &= ~(1u << f);
    if (f == CUDA) {
        t.cuda_capability_ = 0;
        t.cuda_arch_specific_ = false;
    }
    // Removing a feature also removes those that imply it.
    auto bit = [](Feature x) { return 1u << x; };
    if (f == SSE41 || f == AVX) t.features &= ~(bit(AVX) | bit(AVX2) | bit(AVX512));
    if (f == FMA || f == F16C) t.features &= ~(bit(AVX2) | bit(AVX512));
    if (f == AVX2) t.features &= ~bit(AVX512);
    return t;
}

int Target::vector_bytes() const {
    if (has_feature(AVX512)) return 64;
    if (has_feature(AVX)) return 32;
    return 16;
}

std::string Target::to_string() const {
    std::string s = "x86-64-linux";
    for (const auto &fn : feature_names) {
        if (has_feature(fn.feature)) s += std::string("-") + fn.name;
    }
    if (cuda_capability_ != 0) s += "-" + cuda_arch();
    return s;
}

std::string Target::cuda_arch() const {
    if (cuda_capability_ == 0) return "";
    return "sm_" + std::to_string(cuda_capability_) + (cuda_arch_specific_ ? "a" : "");
}

}  // namespace loom
