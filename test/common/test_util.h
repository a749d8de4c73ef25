// Helpers shared by Loom's tests: random inputs and buffer comparison.
#pragma once

#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <string>

#include "loom/loom.h"

namespace loom_test {

/** A generator seeded afresh each run; the seed is printed so that a failure
 * can be replayed with LOOM_TEST_SEED. */
inline std::mt19937 &rng() {
    static std::mt19937 gen = [] {
        unsigned seed = std::random_device{}();
        if (const char *s = std::getenv("LOOM_TEST_SEED"))
            seed = static_cast<unsigned>(std::stoul(s));
        std::printf("[loom] random seed %u (replay with LOOM_TEST_SEED=%u)\n", seed, seed);
        return std::mt19937(seed);
    }();
    return gen;
}

template <typename T> loom::Buffer<T> random_buffer(const std::vector<int> &shape, double lo = -1,
                                                    double hi = 1, const std::string &name = "") {
    loom::Buffer<T> b(shape, name);
    std::uniform_real_distribution<double> dist(lo, hi);
    b.fill([&](const std::vector<int> &) {
        double v = dist(rng());
        if constexpr (std::is_integral_v<T>) return static_cast<T>(std::floor(v));
        else return static_cast<T>(v);
    });
    return b;
}

inline double as_double(const loom::RawBuffer &b, const std::vector<int> &c) {
    const uint8_t *p = b.address_of(c);
    loom::Type t = b.type();
    if (t == loom::Float(32)) return *reinterpret_cast<const float *>(p);
    if (t == loom::Float(64)) return *reinterpret_cast<const double *>(p);
    if (t == loom::Float(16))
        return static_cast<float>(*reinterpret_cast<const loom::float16_t *>(p));
    if (t == loom::BFloat(16))
        return static_cast<float>(*reinterpret_cast<const loom::bfloat16_t *>(p));
    if (t == loom::Int(32)) return *reinterpret_cast<const int32_t *>(p);
    if (t == loom::Int(64)) return static_cast<double>(*reinterpret_cast<const int64_t *>(p));
    if (t == loom::Int(16)) return *reinterpret_cast<const int16_t *>(p);
    if (t == loom::Int(8)) return *reinterpret_cast<const int8_t *>(p);
    if (t == loom::UInt(8) || t == loom::Bool()) return *p;
    if (t == loom::UInt(16)) return *reinterpret_cast<const uint16_t *>(p);
    if (t == loom::UInt(32)) return *reinterpret_cast<const uint32_t *>(p);
    if (t == loom::UInt(64)) return static_cast<double>(*reinterpret_cast<const uint64_t *>(p));
    ADD_FAILURE() << "as_double: unsupported type " << loom::type_to_string(t);
    return 0;
}

/** Checks that two buffers of equal shape agree everywhere, to a relative
 * tolerance (0: exactly). Reports the first few differences. */
inline ::testing::AssertionResult buffers_match(const loom::RawBuffer &actual,
                                                const loom::RawBuffer &expected, double rel_tol = 0,
                                                double abs_tol = 0) {
    if (actual.shape() != expected.shape()) {
        return ::testing::AssertionFailure() << "shapes differ";
    }
    int errors = 0;
    std::ostringstream msg;
    loom::Buffer<uint8_t> walker;
    int n = actual.dimensions();
    std::vector<int> c(n, 0);
    for (int d = 0; d < n; d++) {
        if (actual.extent(d) == 0) return ::testing::AssertionSuccess();
    }
    int64_t count = 0;
    while (true) {
        std::vector<int> ca(n), ce(n);
        for (int d = 0; d < n; d++) {
            ca[d] = c[d] + actual.dim_min(d);
            ce[d] = c[d] + expected.dim_min(d);
        }
        double a = as_double(actual, ca), e = as_double(expected, ce);
        bool ok = (std::isnan(a) && std::isnan(e)) || a == e ||
                  std::abs(a - e) <= abs_tol + rel_tol * std::abs(e);
        if (!ok && errors++ < 5) {
            msg << "\n  at (";
            for (int d = 0; d < n; d++) msg << (d ? ", " : "") << ca[d];
            msg << "): got " << a << ", expected " << e;
        }
        count++;
        int d = n - 1;
        while (d >= 0 && ++c[d] == actual.extent(d)) c[d--] = 0;
        if (d < 0) break;
    }
    if (errors) {
        return ::testing::AssertionFailure()
               << errors << " of " << count << " elements differ" << msg.str();
    }
    return ::testing::AssertionSuccess();
}

/** Whether a call throws E whose message contains every `parts` string. */
template <typename E, typename F>
::testing::AssertionResult throws_with(F &&f, const std::vector<std::string> &parts) {
    try {
        f();
    } catch (const E &e) {
        std::string m = e.what();
        for (const std::string &p : parts) {
            if (m.find(p) == std::string::npos) {
                return ::testing::AssertionFailure() << "message lacks \"" << p << "\": " << m;
            }
        }
        return ::testing::AssertionSuccess();
    } catch (const std::exception &e) {
        return ::testing::AssertionFailure() << "threw a different exception: " << e.what();
    }
    return ::testing::AssertionFailure() << "did not throw";
}

/** pair(x) = (0, 0), updated over r from in(x, r) so that one element reads
 * the other's old value: the first reads the second, or the second the
 * first. Neither element is then a reduction of itself, which the lanes of
 * a vector or the threads of a block could combine. */
inline loom::Func tuple_element_reading_the_other(const loom::BufferParam &in, const loom::Var &x,
                                                  const loom::RDom &r, bool first_reads_second) {
    using loom::Tuple;
    loom::Func pair("pair");
    pair(x) = Tuple(0.0f, 0.0f);
    if (first_reads_second) {
        pair(x) = Tuple(pair(x)[0] + pair(x)[1] * in(x, r), pair(x)[1] + in(x, r));
    } else {
        pair(x) = Tuple(pair(x)[0] + in(x, r), pair(x)[1] + pair(x)[0] * in(x, r));
    }
    return pair;
}

}  // namespace loom_test
