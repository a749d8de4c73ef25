// Helpers for the codegen tests: LoweredFuncs built by hand and buffer
// descriptors built by hand (no dependence on the front end or Buffer.cpp).
#pragma once

#include <gtest/gtest.h>

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "codegen/JITModule.h"
#include "lower/LoweredFunc.h"
#include "loom/IR.h"
#include "loom/IROperator.h"
#include "loom/Target.h"
#include "loom/runtime/loom_runtime.h"

namespace cgtest {

using namespace loom;
using namespace loom::internal;

inline Expr i32(int v) { return IntImm::make(Int(32), v); }
inline Expr f32(float v) { return FloatImm::make(Float(32), v); }
inline Expr var(const std::string &n, Type t = Int(32)) { return Variable::make(t, n); }
inline Expr load(Type t, const std::string &buf, Expr index, Expr pred = Expr()) {
    return Load::make(t, buf, std::move(index), std::move(pred));
}
inline Stmt store(const std::string &buf, Expr value, Expr index, Expr pred = Expr()) {
    return Store::make(buf, std::move(value), std::move(index), std::move(pred));
}
inline Stmt loop(const std::string &n, Expr mn, Expr ext, Stmt body, ForType ft = ForType::Serial) {
    return For::make(n, std::move(mn), std::move(ext), ft, std::move(body));
}
inline LoweredArgument buffer_arg(const std::string &n, Type t, int dims) {
    LoweredArgument a;
    a.name = n;
    a.is_buffer = true;
    a.type = t;
    a.dimensions = dims;
    return a;
}
inline LoweredArgument scalar_arg(const std::string &n, Type t) {
    LoweredArgument a;
    a.name = n;
    a.is_buffer = false;
    a.type = t;
    return a;
}

/** A loom_buffer_t over existing memory. Shape in NumPy order (last index
 * innermost); strides in elements, default dense. */
struct Buf {
    std::vector<loom_dimension_t> dims;
    loom_buffer_t b{};
    Buf(void *host, Type t, std::vector<int> shape, std::vector<int> strides = {},
        std::vector<int> mins = {}) {
        int n = static_cast<int>(shape.size());
        dims.resize(n);
        int s = 1;
        for (int k = n - 1; k >= 0; k--) {
            dims[k].min = mins.empty() ? 0 : mins[k];
            dims[k].extent = shape[k];
            dims[k].stride = strides.empty() ? s : strides[k];
            dims[k].flags = 0;
            s *= shape[k];
        }
        b.host = static_cast<uint8_t *>(host);
        b.type.code = static_cast<uint8_t>(t.code);
        b.type.bits = t.bits;
        b.type.lanes = 1;
        b.dimensions = n;
        b.dim = dims.data();
    }
    void *arg() {
        b.dim = dims.data();
        return &b;
    }
};

inline std::shared_ptr<JITModule> compile(const std::string &name,
                                          std::vector<LoweredArgument> args, Stmt body,
                                          const Target &t = Target("host")) {
    LoweredFunc f;
    f.name = name;
    f.args = std::move(args);
    f.body = std::move(body);
    return JITModule::compile(f, t);
}

inline int run(const std::shared_ptr<JITModule> &m, std::vector<void *> args) {
    return m->entry()(args.data());
}

/** A 1-D elementwise loop: out[x] = f(x) for x in [0, out.extent.0). */
inline Stmt elementwise(const std::string &out, const std::function<Expr(Expr)> &f) {
    Expr x = var("x");
    return loop("x", i32(0), var(out + ".extent.0"), store(out, f(x), x));
}

}  // namespace cgtest
