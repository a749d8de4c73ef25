// Running a hand-built tile program on the stand-in driver and in the
// interpreter, with host buffers of f32 or f16 values: what the tests of
// the tile layer's CUDA translation compare.
#pragma once

#include <gtest/gtest.h>

#include <array>
#include <cmath>
#include <cstring>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "driver_api.h"
#include "fake_cuda.h"
#include "ir/Util.h"
#include "loom/loom.h"
#include "tile/TileCodeGen_CUDA.h"
#include "tile/TileInterpreter.h"

namespace loom_test {

/** A dense, row-major host buffer of f32, f16 or bf16 values. */
struct HostTileBuffer {
    std::string name;
    loom::Type elem;
    std::vector<int> shape;
    std::vector<unsigned char> bytes;
    bool written = false;

    /** Random values in [lo, hi), or NaNs for a buffer the program writes. */
    HostTileBuffer(std::string n, loom::Type t, std::vector<int> s, bool w, std::mt19937 *rng,
                   float lo = -4, float hi = 4)
        : name(std::move(n)), elem(t), shape(std::move(s)), written(w) {
        bytes.assign(size_t(elements()) * t.bytes(), 0);
        std::uniform_real_distribution<float> u(lo, hi);
        for (int64_t i = 0; i < elements(); i++) set(i, written ? NAN : u(*rng));
    }
    int64_t elements() const {
        int64_t n = 1;
        for (int d : shape) n *= d;
        return n;
    }
    std::vector<int64_t> strides() const {
        std::vector<int64_t> s(shape.size(), 1);
        for (size_t d = shape.size() - 1; d-- > 0;) s[d] = s[d + 1] * shape[d + 1];
        return s;
    }
    void set(int64_t i, float v) {
        if (elem.bits == 16) {
            const uint16_t h =
                elem == loom::BFloat(16) ? loom::bfloat16_t(v).bits : loom::float16_t(v).bits;
            memcpy(&bytes[size_t(i) * 2], &h, 2);
        } else {
            memcpy(&bytes[size_t(i) * 4], &v, 4);
        }
    }
    float get(const std::vector<unsigned char> &b, int64_t i) const {
        if (elem.bits == 16) {
            uint16_t h;
            memcpy(&h, &b[size_t(i) * 2], 2);
            return elem == loom::BFloat(16) ? float(loom::bfloat16_t::from_bits(h))
                                            : float(loom::float16_t::from_bits(h));
        }
        float v;
        memcpy(&v, &b[size_t(i) * 4], 4);
        return v;
    }
    float get(int64_t i) const { return get(bytes, i); }
    loom::internal::tile::TileBuffer tile_buffer() const {
        return {name, elem, int(shape.size()), written};
    }
};

/** Scalars by name: Int(32) and Float(32) ones. */
struct TileScalars {
    std::map<std::string, int> ints;
    std::map<std::string, float> floats;
};

class TileProgramRunner : public StandInSession {
  protected:
    /** The buffers after the interpreter ran p over `grid`. */
    std::vector<HostTileBuffer> interpret(const loom::internal::tile::TileProgram &p,
                                          std::vector<HostTileBuffer> buffers,
                                          const TileScalars &scalars,
                                          const std::vector<int> &grid) {
        using namespace loom::internal::tile;
        std::vector<TileHostBuffer> hosts;
        for (HostTileBuffer &b : buffers) {
            hosts.push_back({b.name, b.elem, b.bytes.data(), b.strides()});
        }
        std::map<std::string, loom::Expr> values;
        for (const auto &[n, v] : scalars.ints) values[n] = loom::Expr(v);
        for (const auto &[n, v] : scalars.floats) values[n] = loom::Expr(v);
        interpret_tile_program(p, hosts, values, grid);
        return buffers;
    }

    /** The buffers after the kernel of p ran on the stand-in over `grid`
     * (in the thread order ThreadOrder set); an empty vector, with a
     * failure, if it did not run. */
    std::vector<HostTileBuffer> run(const loom::internal::tile::TileProgram &p,
                                    std::vector<HostTileBuffer> buffers, const TileScalars &scalars,
                                    const std::vector<int> &grid) {
        using namespace loom::internal::tile;
        std::vector<TileBuffer> tbs;
        for (const HostTileBuffer &b : buffers) tbs.push_back(b.tile_buffer());
        const TileKernelSource k = tile_program_to_cuda(p, tbs);
        const std::string source = tile_module_source({k.source});
        void *module = nullptr, *f = nullptr;
        if (cuModuleLoadData(&module, source.c_str()) != 0 ||
            cuModuleGetFunction(&f, module, loom::internal::c_identifier(p.name).c_str()) != 0) {
            ADD_FAILURE() << fake_cuda_kernel_error() << "\n" << source;
            return {};
        }
        std::map<std::string, unsigned long long> pointers;
        for (const HostTileBuffer &b : buffers) {
            pointers[b.name] = device(b.bytes.data(), b.bytes.size());
        }
        std::vector<std::array<unsigned char, 8>> values(k.params.size());
        std::vector<void *> args;
        for (size_t i = 0; i < k.params.size(); i++) {
            const TileKernelParam &param = k.params[i];
            if (param.is_buffer) {
                memcpy(values[i].data(), &pointers.at(param.name), 8);
            } else if (param.type == loom::Float(32)) {
                EXPECT_TRUE(scalars.floats.count(param.name)) << param.name;
                const float v =
                    scalars.floats.count(param.name) ? scalars.floats.at(param.name) : 0;
                memcpy(values[i].data(), &v, 4);
            } else {
                int v = 0;
                bool found = scalars.ints.count(param.name) > 0;
                if (found) v = scalars.ints.at(param.name);
                for (const HostTileBuffer &b : buffers) {
                    for (size_t d = 0; d + 1 < b.shape.size(); d++) {
                        if (param.name == b.name + ".stride." + std::to_string(d)) {
                            v = int(b.strides()[d]);
                            found = true;
                        }
                    }
                }
                EXPECT_TRUE(found) << "no value for " << param.name;
                memcpy(values[i].data(), &v, 4);
            }
            args.push_back(values[i].data());
        }
        if (k.shared_bytes > 48 * 1024) {
            EXPECT_EQ(
                cuFuncSetAttribute(f, 8 /* MAX_DYNAMIC_SHARED_SIZE_BYTES */, int(k.shared_bytes)),
                0);
        }
        if (cuLaunchKernel(f, grid[0], grid.size() > 1 ? grid[1] : 1, grid.size() > 2 ? grid[2] : 1,
                           k.threads, 1, 1, unsigned(k.shared_bytes), nullptr, args.data(),
                           nullptr) != 0 ||
            cuCtxSynchronize() != 0) {
            ADD_FAILURE() << fake_cuda_kernel_error() << "\n" << source;
            return {};
        }
        for (HostTileBuffer &b : buffers) {
            if (b.written) {
                EXPECT_EQ(cuMemcpyDtoH_v2(b.bytes.data(), pointers.at(b.name), b.bytes.size()), 0);
            }
        }
        return buffers;
    }

    /** Runs p on the stand-in in both thread orders and in the interpreter,
     * and expects every written buffer to agree (to `tolerance`, relative
     * to max(1, |value|): sums in another order; NaN where the interpreter
     * leaves NaN). */
    void expect_matches_interpreter(const loom::internal::tile::TileProgram &p,
                                    const std::vector<HostTileBuffer> &buffers,
                                    const TileScalars &scalars, const std::vector<int> &grid,
                                    double tolerance) {
        const std::vector<HostTileBuffer> meant = interpret(p, buffers, scalars, grid);
        for (bool reversed : {false, true}) {
            SCOPED_TRACE(reversed ? "threads highest first" : "threads lowest first");
            const ThreadOrder order(reversed);
            const std::vector<HostTileBuffer> got = run(p, buffers, scalars, grid);
            if (got.empty()) return;
            for (size_t bi = 0; bi < buffers.size(); bi++) {
                const HostTileBuffer &b = buffers[bi];
                if (!b.written) continue;
                int bad = 0;
                for (int64_t i = 0; i < b.elements() && bad < 5; i++) {
                    const float want = meant[bi].get(i), have = got[bi].get(i);
                    if (std::isnan(want)) {
                        EXPECT_TRUE(std::isnan(have)) << b.name << "[" << i << "] written";
                        bad += !std::isnan(have);
                        continue;
                    }
                    const bool ok =
                        std::fabs(have - want) <= tolerance * std::max(1.0f, std::fabs(want));
                    EXPECT_TRUE(ok)
                        << b.name << "[" << i << "] = " << have << ", the interpreter " << want;
                    bad += !ok;
                }
            }
        }
    }
};

}  // namespace loom_test
