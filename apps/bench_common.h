// What the apps' demos and benchmarks share: wall-clock timing and inputs.
#pragma once

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <functional>
#include <vector>

#include <loom/loom.h>

namespace apps {

inline double now_seconds() {
    return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch())
        .count();
}

/** The median seconds of each of `runs` over `rounds` rounds, timed
 * round-robin (A B C A B C ...) so that noise from the rest of the machine
 * hits all alike. */
inline std::vector<double> round_robin_medians(const std::vector<std::function<void()>> &runs,
                                               int rounds) {
    std::vector<std::vector<double>> t(runs.size());
    for (int r = 0; r < rounds; r++) {
        for (size_t k = 0; k < runs.size(); k++) {
            double t0 = now_seconds();
            runs[k]();
            t[k].push_back(now_seconds() - t0);
        }
    }
    std::vector<double> med;
    for (auto &v : t) {
        std::sort(v.begin(), v.end());
        const size_t h = v.size() / 2;
        med.push_back(v.size() % 2 ? v[h] : 0.5 * (v[h - 1] + v[h]));
    }
    return med;
}

/** Fills b with uniform values in [-1, 1) from a fixed seed (xorshift:
 * fast enough for inputs of half a gigabyte). */
inline void fill_uniform(loom::Buffer<float> &b, uint64_t seed) {
    uint64_t x = seed * 0x9E3779B97F4A7C15ull + 1;
    float *p = b.data();
    for (int64_t n = 0; n < b.number_of_elements(); n++) {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        p[n] = static_cast<float>((x >> 40) * (1.0 / (1ull << 24)) * 2.0 - 1.0);
    }
}

}  // namespace apps
