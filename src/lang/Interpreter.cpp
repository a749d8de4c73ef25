// The reference interpreter.
//
// Definitions are first translated ("compiled") into a small tree of Code
// nodes in which variables are resolved to slots of a frame and Params,
// buffer descriptors and intrinsic names are resolved once, so that the
// evaluation loop does no string lookups.
//
// Funcs without update definitions are evaluated point by point and memoized
// per point. A Func with updates is materialized: its dimensions split into
// "slice" dimensions, where every update has the pure Var itself (each value
// of such a Var is an independent computation, by the rule that a pure Var in
// an update appears only in its own position), and "box" dimensions. For each
// slice (a point in the slice dimensions) the interpreter computes the box of
// points that the updates write or read of the Func itself (a fixed point when
// updates also iterate pure Vars over the box), then runs the pure definition
// lazily per point of the box (so points that no update needs are never
// evaluated, which keeps reads of inputs exactly those the semantics implies)
// and the updates in order. Points outside the box are not touched by any
// update, so they take the pure definition's value.

#include "lang/Interpreter.h"

#include <cmath>
#include <cstring>
#include <deque>
#include <limits>
#include <memory>
#include <sstream>
#include <unordered_map>

#include "ir/IRVisitor.h"
#include "ir/Scope.h"
#include "ir/Util.h"
#include "lang/Function.h"
#include "loom/Error.h"
#include "loom/IROperator.h"
#include "loom/Interpreter.h"
#include "loom/Param.h"

namespace loom {
namespace internal {

namespace {

// ---------------------------------------------------------------------------
// Scalar values and their arithmetic.

/** A scalar of a known type: ints are kept sign-extended in i, unsigned ints
 * and bools zero-extended in u, floats (already rounded to their format) in f. */
union Val {
    int64_t i;
    uint64_t u;
    double f;
};

inline int64_t wrap_i(uint64_t v, int bits) {
    if (bits >= 64) return static_cast<int64_t>(v);
    int s = 64 - bits;
    return static_cast<int64_t>(v << s) >> s;
}

inline uint64_t wrap_u(uint64_t v, int bits) {
    return bits >= 64 ? v : v & ((uint64_t(1) << bits) - 1);
}

/** Rounds to the format of float type t. 16-bit formats round through
 * float32, as compiled code computes them in float32. */
inline double round_float(Type t, double x) {
    if (t.bits == 64) return x;
    float f = static_cast<float>(x);
    if (t.bits == 32) return f;
    if (t.is_bfloat()) return static_cast<float>(bfloat16_t(f));
    return static_cast<float>(float16_t(f));
}

Val cast_val(Type from, Type to, Val v) {
    Val r;
    if (to.is_bool()) {
        r.u = from.is_float() ? (v.f != 0.0) : (v.u != 0);
        return r;
    }
    if (to.is_float()) {
        if (from.is_float()) {
            r.f = round_float(to, v.f);
        } else if (to.bits == 64) {
            r.f = from.is_int() ? static_cast<double>(v.i) : static_cast<double>(v.u);
        } else {
            // One rounding, straight to float32 (a detour through double
            // could round twice for 64-bit integers).
            float f = from.is_int() ? static_cast<float>(v.i) : static_cast<float>(v.u);
            r.f = round_float(to, f);
        }
        return r;
    }
    internal_assert(to.is_int_or_uint()) << "interpreter: cast to " << type_to_string(to);
    uint64_t bits;
    if (from.is_float()) {
        // Truncate toward zero. Out-of-range values are unspecified in
        // compiled code; here they saturate to the 64-bit range and then wrap,
        // avoiding undefined behavior in the interpreter itself.
        double x = std::trunc(v.f);
        if (std::isnan(x)) bits = 0;
        else if (x >= 18446744073709551616.0) bits = ~uint64_t(0);
        else if (x >= 9223372036854775808.0) bits = static_cast<uint64_t>(x);
        else if (x < -9223372036854775808.0) bits = uint64_t(1) << 63;
        else bits = static_cast<uint64_t>(static_cast<int64_t>(x));
    } else {
        bits = v.u;  // the two's complement bits of the (extended) value
    }
    if (to.is_int()) r.i = wrap_i(bits, to.bits);
    else r.u = wrap_u(bits, to.bits);
    return r;
}

uint64_t to_bits(Type t, Val v) {
    if (t.is_int_or_uint()) return wrap_u(v.u, t.bits);
    if (t.bits == 64) {
        uint64_t b;
        std::memcpy(&b, &v.f, 8);
        return b;
    }
    float f = static_cast<float>(v.f);
    if (t.bits == 32) {
        uint32_t b;
        std::memcpy(&b, &f, 4);
        return b;
    }
    if (t.is_bfloat()) return bfloat16_t(f).bits;
    return float16_t(f).bits;
}

Val from_bits(Type t, uint64_t b) {
    Val r;
    if (t.is_int()) {
        r.i = wrap_i(b, t.bits);
    } else if (t.is_uint()) {
        r.u = wrap_u(b, t.bits);
    } else if (t.bits == 64) {
        std::memcpy(&r.f, &b, 8);
    } else if (t.bits == 32) {
        uint32_t b32 = static_cast<uint32_t>(b);
        float f;
        std::memcpy(&f, &b32, 4);
        r.f = f;
    } else if (t.is_bfloat()) {
        r.f = static_cast<float>(bfloat16_t::from_bits(static_cast<uint16_t>(b)));
    } else {
        r.f = static_cast<float>(float16_t::from_bits(static_cast<uint16_t>(b)));
    }
    return r;
}

Val load_elem(Type t, const uint8_t *p) {
    Val r;
    if (t.is_bool()) {
        r.u = *p != 0;
        return r;
    }
    uint64_t b = 0;
    switch (t.bytes()) {
    case 1: b = *p; break;
    case 2: {
        uint16_t x;
        std::memcpy(&x, p, 2);
        b = x;
        break;
    }
    case 4: {
        uint32_t x;
        std::memcpy(&x, p, 4);
        b = x;
        break;
    }
    case 8: std::memcpy(&b, p, 8); break;
    default: internal_error << "interpreter: element type " << type_to_string(t);
    }
    return from_bits(t, b);
}

void store_elem(Type t, uint8_t *p, Val v) {
    if (t.is_bool()) {
        *p = v.u ? 1 : 0;
        return;
    }
    uint64_t b = to_bits(t, v);
    switch (t.bytes()) {
    case 1: *p = static_cast<uint8_t>(b); break;
    case 2: {
        uint16_t x = static_cast<uint16_t>(b);
        std::memcpy(p, &x, 2);
        break;
    }
    case 4: {
        uint32_t x = static_cast<uint32_t>(b);
        std::memcpy(p, &x, 4);
        break;
    }
    case 8: std::memcpy(p, &b, 8); break;
    default: internal_error << "interpreter: element type " << type_to_string(t);
    }
}

Val scalar_param_value(const ParameterContents &p) {
    if (!p.scalar_set) {
        runtime_error_report << "Param " << p.name
                             << " has no value; call set() on it before interpreting.";
    }
    return from_bits(p.type, p.scalar_bits);
}

Expr val_to_expr(Type t, Val v) {
    if (t.is_int()) return IntImm::make(t, v.i);
    if (t.is_uint()) return UIntImm::make(t, v.u);
    return FloatImm::make(t, v.f);
}

// ---------------------------------------------------------------------------
// Compiled expressions.

enum class Op : uint8_t {
    Const,
    Var,
    Cast,
    Reinterpret,
    Add,
    Sub,
    Mul,
    Div,
    Mod,
    Min,
    Max,
    EQ,
    NE,
    LT,
    LE,
    GT,
    GE,
    And,
    Or,
    Not,
    Select,
    Let,
    Image,
    FuncCall,
    SelfCall,
    Math1,
    Math2,
    Abs,
    BitAnd,
    BitOr,
    BitXor,
    BitNot,
    Shl,
    Shr,
    Identity,
    DivRoundUp,
};

enum class Math : uint8_t { Exp, Log, Sqrt, Rsqrt, Tanh, Sin, Cos, Floor, Ceil, Round, Erf, Pow };

struct FuncState;

/** A read of an input buffer, resolved once per interpretation. */
struct ImageRef {
    std::string name;
    RawBuffer buf;
    Type type;
    std::vector<int> min, extent;
    std::vector<int64_t> stride;  // in bytes
};

struct Code {
    Op op;
    Type type;
    Val imm{};
    int slot = -1;          // Var, Let
    Math math = Math::Exp;  // Math1, Math2
    FuncState *callee = nullptr;
    int value_index = 0;
    const ImageRef *image = nullptr;
    std::vector<const Code *> kids;
};

std::string point_to_string(const int *c, int n) {
    std::ostringstream s;
    s << "(";
    for (int i = 0; i < n; i++) s << (i ? ", " : "") << c[i];
    s << ")";
    return s.str();
}

struct KeyHash {
    size_t operator()(const std::vector<int> &k) const {
        uint64_t h = 1469598103934665603ull;
        for (int x : k) {
            h ^= static_cast<uint32_t>(x);
            h *= 1099511628211ull;
        }
        return static_cast<size_t>(h ^ (h >> 29));
    }
};

constexpr int kMaxDims = 32;

/** The materialized values of one slice of a Func with updates. */
struct Slice {
    std::vector<int> point;       // full coordinates; slice dims hold the key
    std::vector<int> lo, extent;  // the box, per box dimension
    std::vector<int64_t> stride;  // cell strides, per box dimension
    int64_t cells = 0;
    std::vector<Val> data;     // cell * outputs + value_index
    std::vector<uint8_t> has;  // whether the cell holds a value yet
    bool busy = false;
};

struct Update {
    std::vector<const Code *> args, values;
    const Code *predicate = nullptr;
    bool predicate_reads_self = false;
    std::vector<const Code *> self_calls;
    std::vector<bool> pure_at;       // per dimension: the arg is the pure Var
    std::vector<int> rmin, rextent;  // the RDom, outermost first
    int frame = 0;
};

struct FuncState {
    FunctionContents *fn = nullptr;
    int dims = 0, outs = 0;
    bool compiled = false;
    std::vector<const Code *> init;
    int init_frame = 0;
    std::vector<Update> updates;
    std::vector<int> slice_dims, box_dims;
    std::vector<bool> request_driven;  // per box dim: some update iterates its pure Var
    bool needs_fixed_point = false;
    // Caches.
    std::unordered_map<std::vector<int>, std::vector<Val>, KeyHash> memo;
    std::unordered_map<std::vector<int>, std::unique_ptr<Slice>, KeyHash> slices;
    std::vector<int> scratch;
    // The region of an output, used to seed boxes along request-driven dims
    // so that evaluating an output point by point does not regrow them.
    std::vector<int> hint_min, hint_extent;
};

struct Loop {
    int slot, lo, extent;
};

/** Runs body() for every point of the loop nest (last loop innermost),
 * setting the loop variables in frame. */
template <typename F> void for_each_point(const std::vector<Loop> &loops, Val *frame, F body) {
    for (const Loop &l : loops) {
        if (l.extent <= 0) return;
    }
    int n = static_cast<int>(loops.size());
    for (const Loop &l : loops) frame[l.slot].i = l.lo;
    while (true) {
        body();
        int k = n - 1;
        while (k >= 0) {
            const Loop &l = loops[k];
            if (++frame[l.slot].i < static_cast<int64_t>(l.lo) + l.extent) break;
            frame[l.slot].i = l.lo;
            k--;
        }
        if (k < 0) return;
    }
}

class Interp {
  public:
    FuncState *state(FunctionContents *fn) {
        auto &p = states[fn];
        if (!p) {
            p = std::make_unique<FuncState>();
            p->fn = fn;
            p->dims = static_cast<int>(fn->args.size());
            p->outs = static_cast<int>(fn->output_types.size());
            user_assert(p->dims <= kMaxDims)
                << "Func " << fn->name << " has " << p->dims << " dimensions; the interpreter "
                << "supports at most " << kMaxDims << ".";
        }
        return p.get();
    }

    /** Value `vi` of Func st at coordinates c. */
    Val get(FuncState *st, const int *c, int vi);

    /** Compiles e with variables resolved through `slots`. */
    const Code *compile(const Expr &e, Scope<int> &slots, int &nslots, FuncState *self,
                        const std::string &context);

    Val eval(const Code *c, Val *frame, Slice *slice);

    void compile_func(FuncState *st);

  private:
    std::unordered_map<const FunctionContents *, std::unique_ptr<FuncState>> states;
    std::deque<Code> pool;
    std::deque<ImageRef> images;
    std::map<std::pair<const void *, std::string>, const ImageRef *> image_cache;

    Code *node(Op op, Type t) {
        pool.emplace_back();
        Code *c = &pool.back();
        c->op = op;
        c->type = t;
        return c;
    }
    const ImageRef *image_ref(const Call *op);
    Val buffer_field(const ParameterContents &p, const std::string &name);

    std::vector<Val> eval_init(FuncState *st, const int *c);
    void init_cell(FuncState *st, Slice *s, int64_t cell);
    int64_t cell_index(FuncState *st, const Slice *s, const int *c) const;
    std::unique_ptr<Slice> materialize(FuncState *st, const int *c, const Slice *old);
    void compute_box(FuncState *st, Slice *s);
};

// ---------------------------------------------------------------------------
// Compilation.

const ImageRef *Interp::image_ref(const Call *op) {
    const void *key = op->param ? static_cast<const void *>(op->param.get())
                                : static_cast<const void *>(op->buffer.get());
    auto it = image_cache.find({key, op->name});
    if (it != image_cache.end()) return it->second;
    RawBuffer b;
    if (op->param) {
        b = op->param->buffer;
        if (!b.defined()) {
            runtime_error_report << "BufferParam " << op->name << " is not bound to a buffer; call "
                                 << op->name << ".set(buffer) before interpreting.";
        }
    } else if (op->buffer) {
        b.contents = op->buffer;
    } else {
        internal_error << "Image call to " << op->name << " with neither param nor buffer";
    }
    if (b.type() != op->type) {
        runtime_error_report << "Buffer " << op->name << " holds " << type_to_string(b.type())
                             << " but is read as " << type_to_string(op->type) << ".";
    }
    if (b.dimensions() != static_cast<int>(op->args.size())) {
        runtime_error_report << "Buffer " << op->name << " has " << b.dimensions()
                             << " dimensions but is read with " << op->args.size()
                             << " coordinates.";
    }
    user_assert(b.dimensions() <= kMaxDims)
        << "Buffer " << op->name << " has " << b.dimensions() << " dimensions; the interpreter "
        << "supports at most " << kMaxDims << ".";
    images.emplace_back();
    ImageRef &r = images.back();
    r.name = op->name;
    r.buf = b;
    r.type = b.type();
    for (int d = 0; d < b.dimensions(); d++) {
        r.min.push_back(b.dim_min(d));
        r.extent.push_back(b.extent(d));
        r.stride.push_back(static_cast<int64_t>(b.stride(d)) * b.type().bytes());
    }
    image_cache[{key, op->name}] = &r;
    return &r;
}

Val Interp::buffer_field(const ParameterContents &p, const std::string &name) {
    const RawBuffer &b = p.buffer;
    if (!b.defined()) {
        runtime_error_report << "BufferParam " << p.name << " is not bound to a buffer (its "
                             << "descriptor field " << name << " is used); call " << p.name
                             << ".set(buffer) before interpreting.";
    }
    // name is "<buffer>.<field>.<dim>".
    std::string rest = name.substr(p.name.size() + 1);
    size_t dot = rest.find('.');
    internal_assert(dot != std::string::npos) << "buffer field " << name;
    std::string field = rest.substr(0, dot);
    int d = std::stoi(rest.substr(dot + 1));
    if (d < 0 || d >= b.dimensions()) {
        runtime_error_report << "BufferParam " << p.name << " is bound to a buffer of "
                             << b.dimensions() << " dimensions, but " << name << " is used.";
    }
    Val v;
    if (field == "min") v.i = b.dim_min(d);
    else if (field == "extent") v.i = b.extent(d);
    else if (field == "stride") v.i = b.stride(d);
    else internal_error << "unknown buffer field " << name;
    return v;
}

const Code *Interp::compile(const Expr &e, Scope<int> &slots, int &nslots, FuncState *self,
                            const std::string &context) {
    internal_assert(e.defined()) << "interpreter: undefined Expr in " << context;
    Type t = e.type();
    user_assert(t.is_scalar()) << "The interpreter evaluates scalar definitions only, but "
                               << context << " contains a vector of type " << type_to_string(t)
                               << ".";
    auto bin = [&](Op op, const Expr &a, const Expr &b) {
        Code *c = node(op, t);
        c->kids = {compile(a, slots, nslots, self, context),
                   compile(b, slots, nslots, self, context)};
        return c;
    };
    switch (e.node_type()) {
    case IRNodeType::IntImm: {
        Code *c = node(Op::Const, t);
        c->imm.i = e.as<IntImm>()->value;
        return c;
    }
    case IRNodeType::UIntImm: {
        Code *c = node(Op::Const, t);
        c->imm.u = e.as<UIntImm>()->value;
        return c;
    }
    case IRNodeType::FloatImm: {
        Code *c = node(Op::Const, t);
        c->imm.f = round_float(t, e.as<FloatImm>()->value);
        return c;
    }
    case IRNodeType::Cast: {
        const Cast *op = e.as<Cast>();
        Code *c = node(Op::Cast, t);
        c->kids = {compile(op->value, slots, nslots, self, context)};
        return c;
    }
    case IRNodeType::Reinterpret: {
        const Reinterpret *op = e.as<Reinterpret>();
        Code *c = node(Op::Reinterpret, t);
        c->kids = {compile(op->value, slots, nslots, self, context)};
        return c;
    }
    case IRNodeType::Variable: {
        const Variable *op = e.as<Variable>();
        if (const int *s = slots.find(op->name)) {
            Code *c = node(Op::Var, t);
            c->slot = *s;
            return c;
        }
        if (op->param) {
            Code *c = node(Op::Const, t);
            if (op->param->is_buffer) c->imm = buffer_field(*op->param, op->name);
            else c->imm = scalar_param_value(*op->param);
            if (op->param->is_buffer || op->param->type != t) {
                Type from = op->param->is_buffer ? Int(32) : op->param->type;
                c->imm = cast_val(from, t, c->imm);
            }
            return c;
        }
        user_error << "The interpreter found Var " << op->name << " free in " << context
                   << " (it is not an argument of the definition, an RVar or a Param).";
    }
    case IRNodeType::Add: {
        auto *op = e.as<Add>();
        return bin(Op::Add, op->a, op->b);
    }
    case IRNodeType::Sub: {
        auto *op = e.as<Sub>();
        return bin(Op::Sub, op->a, op->b);
    }
    case IRNodeType::Mul: {
        auto *op = e.as<Mul>();
        return bin(Op::Mul, op->a, op->b);
    }
    case IRNodeType::Div: {
        auto *op = e.as<Div>();
        return bin(Op::Div, op->a, op->b);
    }
    case IRNodeType::Mod: {
        auto *op = e.as<Mod>();
        return bin(Op::Mod, op->a, op->b);
    }
    case IRNodeType::Min: {
        auto *op = e.as<Min>();
        return bin(Op::Min, op->a, op->b);
    }
    case IRNodeType::Max: {
        auto *op = e.as<Max>();
        return bin(Op::Max, op->a, op->b);
    }
    case IRNodeType::EQ: {
        auto *op = e.as<EQ>();
        return bin(Op::EQ, op->a, op->b);
    }
    case IRNodeType::NE: {
        auto *op = e.as<NE>();
        return bin(Op::NE, op->a, op->b);
    }
    case IRNodeType::LT: {
        auto *op = e.as<LT>();
        return bin(Op::LT, op->a, op->b);
    }
    case IRNodeType::LE: {
        auto *op = e.as<LE>();
        return bin(Op::LE, op->a, op->b);
    }
    case IRNodeType::GT: {
        auto *op = e.as<GT>();
        return bin(Op::GT, op->a, op->b);
    }
    case IRNodeType::GE: {
        auto *op = e.as<GE>();
        return bin(Op::GE, op->a, op->b);
    }
    case IRNodeType::And: {
        auto *op = e.as<And>();
        return bin(Op::And, op->a, op->b);
    }
    case IRNodeType::Or: {
        auto *op = e.as<Or>();
        return bin(Op::Or, op->a, op->b);
    }
    case IRNodeType::Not: {
        Code *c = node(Op::Not, t);
        c->kids = {compile(e.as<Not>()->a, slots, nslots, self, context)};
        return c;
    }
    case IRNodeType::Select: {
        const Select *op = e.as<Select>();
        Code *c = node(Op::Select, t);
        c->kids = {compile(op->condition, slots, nslots, self, context),
                   compile(op->true_value, slots, nslots, self, context),
                   compile(op->false_value, slots, nslots, self, context)};
        return c;
    }
    case IRNodeType::Let: {
        const Let *op = e.as<Let>();
        Code *c = node(Op::Let, t);
        c->kids.push_back(compile(op->value, slots, nslots, self, context));
        c->slot = nslots++;
        {
            ScopedBinding<int> bind(slots, op->name, c->slot);
            c->kids.push_back(compile(op->body, slots, nslots, self, context));
        }
        return c;
    }
    case IRNodeType::Call: {
        const Call *op = e.as<Call>();
        std::vector<const Code *> args;
        for (const Expr &a : op->args) args.push_back(compile(a, slots, nslots, self, context));
        if (op->call_type == Call::Image) {
            Code *c = node(Op::Image, t);
            c->image = image_ref(op);
            c->kids = args;
            return c;
        }
        if (op->call_type == Call::Func) {
            internal_assert(op->func) << "Func call to " << op->name << " without a Func";
            bool is_self = self && op->func.get() == self->fn;
            Code *c = node(is_self ? Op::SelfCall : Op::FuncCall, t);
            c->callee = is_self ? self : state(op->func.get());
            c->value_index = op->value_index;
            c->kids = args;
            return c;
        }
        // Math functions (Extern or PureIntrinsic, named "<fn>_f32"/"_f64")
        // and Loom's intrinsics.
        static const std::map<std::string, Math> math1 = {
            {"exp", Math::Exp},     {"log", Math::Log},     {"sqrt", Math::Sqrt},
            {"rsqrt", Math::Rsqrt}, {"tanh", Math::Tanh},   {"sin", Math::Sin},
            {"cos", Math::Cos},     {"floor", Math::Floor}, {"ceil", Math::Ceil},
            {"round", Math::Round}, {"erf", Math::Erf},
        };
        std::string base = op->name;
        if (ends_with(base, "_f32") || ends_with(base, "_f64"))
            base = base.substr(0, base.size() - 4);
        auto m = math1.find(base);
        if (m != math1.end() && args.size() == 1 && t.is_float()) {
            Code *c = node(Op::Math1, t);
            c->math = m->second;
            c->kids = args;
            return c;
        }
        if (base == "pow" && args.size() == 2 && t.is_float()) {
            Code *c = node(Op::Math2, t);
            c->math = Math::Pow;
            c->kids = args;
            return c;
        }
        static const std::map<std::string, std::pair<Op, size_t>> intrinsics = {
            {Call::abs, {Op::Abs, 1}},
            {Call::bitwise_and, {Op::BitAnd, 2}},
            {Call::bitwise_or, {Op::BitOr, 2}},
            {Call::bitwise_xor, {Op::BitXor, 2}},
            {Call::bitwise_not, {Op::BitNot, 1}},
            {Call::shift_left, {Op::Shl, 2}},
            {Call::shift_right, {Op::Shr, 2}},
            {Call::likely, {Op::Identity, 1}},
            {Call::div_round_up, {Op::DivRoundUp, 2}},
        };
        auto in = intrinsics.find(op->name);
        user_assert(in != intrinsics.end() && in->second.second == args.size())
            << "The interpreter does not support the call " << op->name << " (in " << context
            << ").";
        Code *c = node(in->second.first, t);
        c->kids = args;
        return c;
    }
    default:
        user_error << "The interpreter cannot evaluate this kind of expression (in " << context
                   << "); it handles Func definitions, not lowered code.";
    }
}

bool code_has_self_call(const Code *c) {
    if (c->op == Op::SelfCall) return true;
    for (const Code *k : c->kids) {
        if (code_has_self_call(k)) return true;
    }
    return false;
}

void collect_self_calls(const Code *c, std::vector<const Code *> &out) {
    if (c->op == Op::SelfCall) out.push_back(c);
    for (const Code *k : c->kids) collect_self_calls(k, out);
}

void Interp::compile_func(FuncState *st) {
    FunctionContents &f = *st->fn;
    internal_assert(f.init.defined()) << "interpreting undefined Func " << f.name;
    {
        Scope<int> slots;
        int n = st->dims;
        for (int i = 0; i < n; i++) slots.push(f.args[i], i);
        for (const Expr &v : f.init.values) {
            st->init.push_back(compile(v, slots, n, nullptr, "the definition of Func " + f.name));
        }
        st->init_frame = n;
    }
    std::vector<bool> slice(st->dims, true);
    for (size_t k = 0; k < f.updates.size(); k++) {
        const Definition &d = f.updates[k];
        std::string ctx = "update " + std::to_string(k) + " of Func " + f.name;
        Update u;
        Scope<int> slots;
        int n = st->dims;
        for (int i = 0; i < st->dims; i++) slots.push(f.args[i], i);
        std::vector<ReductionVariable> rvars = rvars_of(d);
        for (const ReductionVariable &rv : rvars) slots.push(rv.var, n++);
        // RDom bounds depend only on constants and Params: evaluate them now.
        for (const ReductionVariable &rv : rvars) {
            Scope<int> none;
            int m = 0;
            std::vector<Val> frame(1);
            const Code *lo =
                compile(rv.min, none, m, nullptr, "the bounds of RDom " + d.rdom->name);
            const Code *ex =
                compile(rv.extent, none, m, nullptr, "the bounds of RDom " + d.rdom->name);
            frame.resize(std::max(m, 1));
            u.rmin.push_back(static_cast<int>(eval(lo, frame.data(), nullptr).i));
            u.rextent.push_back(static_cast<int>(eval(ex, frame.data(), nullptr).i));
        }
        for (size_t i = 0; i < d.args.size(); i++) {
            const Variable *v = d.args[i].as<Variable>();
            bool pure = v && !v->param && !v->rdom && v->name == f.args[i];
            u.pure_at.push_back(pure);
            if (!pure) slice[i] = false;
            u.args.push_back(compile(d.args[i], slots, n, st, ctx));
        }
        for (const Expr &v : d.values) u.values.push_back(compile(v, slots, n, st, ctx));
        if (d.rdom && d.rdom->predicate.defined()) {
            u.predicate = compile(d.rdom->predicate, slots, n, st, ctx);
            u.predicate_reads_self = code_has_self_call(u.predicate);
        }
        for (const Code *v : u.values) collect_self_calls(v, u.self_calls);
        // A where() that reads the Func reads it in the box too.
        if (u.predicate) collect_self_calls(u.predicate, u.self_calls);
        for (const Code *a : u.args) {
            user_assert(!code_has_self_call(a))
                << "In " << ctx << ", the left-hand side reads " << f.name
                << " itself; the interpreter does not support that.";
        }
        for (const Code *sc : u.self_calls) {
            for (const Code *a : sc->kids) {
                user_assert(!code_has_self_call(a))
                    << "In " << ctx << ", a coordinate of a call of " << f.name
                    << " to itself reads " << f.name << " again; the interpreter does not "
                    << "support that.";
            }
        }
        u.frame = n;
        st->updates.push_back(std::move(u));
    }
    for (int i = 0; i < st->dims; i++) {
        if (slice[i]) {
            st->slice_dims.push_back(i);
        } else {
            bool driven = false;
            for (const Update &u : st->updates) driven = driven || u.pure_at[i];
            st->box_dims.push_back(i);
            st->request_driven.push_back(driven);
            st->needs_fixed_point = st->needs_fixed_point || driven;
        }
    }
    st->compiled = true;
}

// ---------------------------------------------------------------------------
// Evaluation.

double math1(Math m, double x) {
    switch (m) {
    case Math::Exp: return std::exp(x);
    case Math::Log: return std::log(x);
    case Math::Sqrt: return std::sqrt(x);
    case Math::Rsqrt: return 1.0 / std::sqrt(x);
    case Math::Tanh: return std::tanh(x);
    case Math::Sin: return std::sin(x);
    case Math::Cos: return std::cos(x);
    case Math::Floor: return std::floor(x);
    case Math::Ceil: return std::ceil(x);
    case Math::Round: return std::nearbyint(x);  // ties to even in the default mode
    case Math::Erf: return std::erf(x);
    default: internal_error << "math1";
    }
}

float math1f(Math m, float x) {
    switch (m) {
    case Math::Exp: return std::exp(x);
    case Math::Log: return std::log(x);
    case Math::Sqrt: return std::sqrt(x);
    case Math::Rsqrt: return 1.0f / std::sqrt(x);
    case Math::Tanh: return std::tanh(x);
    case Math::Sin: return std::sin(x);
    case Math::Cos: return std::cos(x);
    case Math::Floor: return std::floor(x);
    case Math::Ceil: return std::ceil(x);
    case Math::Round: return std::nearbyint(x);
    case Math::Erf: return std::erf(x);
    default: internal_error << "math1f";
    }
}

Val Interp::eval(const Code *c, Val *frame, Slice *slice) {
    const Type &t = c->type;
    Val r;
    switch (c->op) {
    case Op::Const: return c->imm;
    case Op::Var: return frame[c->slot];
    case Op::Cast: return cast_val(c->kids[0]->type, t, eval(c->kids[0], frame, slice));
    case Op::Reinterpret: {
        const Code *k = c->kids[0];
        return from_bits(t, to_bits(k->type, eval(k, frame, slice)));
    }
    case Op::Add:
    case Op::Sub:
    case Op::Mul:
    case Op::Div:
    case Op::Mod:
    case Op::Min:
    case Op::Max: {
        Val a = eval(c->kids[0], frame, slice), b = eval(c->kids[1], frame, slice);
        if (t.is_float()) {
            double x = a.f, y = b.f, z = 0;
            switch (c->op) {
            case Op::Add: z = x + y; break;
            case Op::Sub: z = x - y; break;
            case Op::Mul: z = x * y; break;
            case Op::Div: z = x / y; break;
            case Op::Mod: {
                // a - b * floor(a / b), each step in the type's precision.
                double q = std::floor(round_float(t, x / y));
                z = x - round_float(t, y * q);
                break;
            }
            case Op::Min: z = std::fmin(x, y); break;
            case Op::Max: z = std::fmax(x, y); break;
            default: break;
            }
            r.f = round_float(t, z);
        } else if (t.is_int()) {
            int64_t x = a.i, y = b.i;
            uint64_t ux = a.u, uy = b.u, z = 0;
            switch (c->op) {
            case Op::Add: z = ux + uy; break;
            case Op::Sub: z = ux - uy; break;
            case Op::Mul: z = ux * uy; break;
            case Op::Div: z = static_cast<uint64_t>(div_imp(x, y)); break;
            case Op::Mod: z = static_cast<uint64_t>(mod_imp(x, y)); break;
            case Op::Min: z = static_cast<uint64_t>(std::min(x, y)); break;
            case Op::Max: z = static_cast<uint64_t>(std::max(x, y)); break;
            default: break;
            }
            r.i = wrap_i(z, t.bits);
        } else {
            uint64_t x = a.u, y = b.u, z = 0;
            switch (c->op) {
            case Op::Add: z = x + y; break;
            case Op::Sub: z = x - y; break;
            case Op::Mul: z = x * y; break;
            case Op::Div: z = y ? x / y : 0; break;
            case Op::Mod: z = y ? x % y : 0; break;
            case Op::Min: z = std::min(x, y); break;
            case Op::Max: z = std::max(x, y); break;
            default: break;
            }
            r.u = wrap_u(z, t.bits);
        }
        return r;
    }
    case Op::EQ:
    case Op::NE:
    case Op::LT:
    case Op::LE:
    case Op::GT:
    case Op::GE: {
        const Type &ot = c->kids[0]->type;
        Val a = eval(c->kids[0], frame, slice), b = eval(c->kids[1], frame, slice);
        int cmp;  // -1, 0, 1, or 2 for unordered (NaN)
        if (ot.is_float()) cmp = a.f < b.f ? -1 : a.f > b.f ? 1 : a.f == b.f ? 0 : 2;
        else if (ot.is_int()) cmp = a.i < b.i ? -1 : a.i > b.i ? 1 : 0;
        else cmp = a.u < b.u ? -1 : a.u > b.u ? 1 : 0;
        bool z = false;
        switch (c->op) {
        case Op::EQ: z = cmp == 0; break;
        case Op::NE: z = cmp != 0; break;
        case Op::LT: z = cmp == -1; break;
        case Op::LE: z = cmp == -1 || cmp == 0; break;
        case Op::GT: z = cmp == 1; break;
        case Op::GE: z = cmp == 1 || cmp == 0; break;
        default: break;
        }
        r.u = z;
        return r;
    }
    case Op::And:
        r.u = eval(c->kids[0], frame, slice).u && eval(c->kids[1], frame, slice).u;
        return r;
    case Op::Or:
        r.u = eval(c->kids[0], frame, slice).u || eval(c->kids[1], frame, slice).u;
        return r;
    case Op::Not: r.u = !eval(c->kids[0], frame, slice).u; return r;
    case Op::Select:
        // Only the chosen side is evaluated: a select that guards an access
        // (e.g. a boundary condition) must not read out of bounds.
        return eval(c->kids[0], frame, slice).u ? eval(c->kids[1], frame, slice)
                                                : eval(c->kids[2], frame, slice);
    case Op::Let:
        frame[c->slot] = eval(c->kids[0], frame, slice);
        return eval(c->kids[1], frame, slice);
    case Op::Image: {
        const ImageRef &im = *c->image;
        int n = static_cast<int>(c->kids.size());
        int coords[kMaxDims];
        for (int d = 0; d < n; d++) coords[d] = static_cast<int>(eval(c->kids[d], frame, slice).i);
        int64_t off = 0;
        for (int d = 0; d < n; d++) {
            if (coords[d] < im.min[d] ||
                static_cast<int64_t>(coords[d]) >= static_cast<int64_t>(im.min[d]) + im.extent[d]) {
                runtime_error_report << "Buffer " << im.name << " is read at "
                                     << point_to_string(coords, n) << ", out of bounds: coordinate "
                                     << coords[d] << " of dimension " << d
                                     << " is outside its valid range [" << im.min[d] << ", "
                                     << static_cast<int64_t>(im.min[d]) + im.extent[d] - 1 << "].";
            }
            off += (static_cast<int64_t>(coords[d]) - im.min[d]) * im.stride[d];
        }
        return load_elem(im.type, im.buf.host() + off);
    }
    case Op::FuncCall: {
        int n = static_cast<int>(c->kids.size());
        int coords[kMaxDims];
        for (int d = 0; d < n; d++) coords[d] = static_cast<int>(eval(c->kids[d], frame, slice).i);
        return get(c->callee, coords, c->value_index);
    }
    case Op::SelfCall: {
        FuncState *st = c->callee;
        user_assert(slice) << "Func " << st->fn->name << " reads itself where the interpreter "
                           << "cannot follow (in a coordinate or a where() condition).";
        int n = static_cast<int>(c->kids.size());
        int coords[kMaxDims];
        for (int d = 0; d < n; d++) coords[d] = static_cast<int>(eval(c->kids[d], frame, slice).i);
        int64_t cell = cell_index(st, slice, coords);
        internal_assert(cell >= 0) << "interpreter: Func " << st->fn->name << " reads itself at "
                                   << point_to_string(coords, n) << ", outside the box it computed";
        if (!slice->has[cell]) init_cell(st, slice, cell);
        return slice->data[cell * st->outs + c->value_index];
    }
    case Op::Math1: {
        double x = eval(c->kids[0], frame, slice).f;
        if (t.bits == 64) r.f = math1(c->math, x);
        else r.f = round_float(t, math1f(c->math, static_cast<float>(x)));
        return r;
    }
    case Op::Math2: {
        double x = eval(c->kids[0], frame, slice).f, y = eval(c->kids[1], frame, slice).f;
        if (t.bits == 64) r.f = std::pow(x, y);
        else r.f = round_float(t, std::pow(static_cast<float>(x), static_cast<float>(y)));
        return r;
    }
    case Op::Abs: {
        Val a = eval(c->kids[0], frame, slice);
        if (t.is_float()) r.f = std::fabs(a.f);
        else if (t.is_int()) r.i = wrap_i(a.i < 0 ? uint64_t(0) - a.u : a.u, t.bits);
        else r.u = a.u;
        return r;
    }
    case Op::BitAnd:
    case Op::BitOr:
    case Op::BitXor: {
        uint64_t x = eval(c->kids[0], frame, slice).u, y = eval(c->kids[1], frame, slice).u;
        uint64_t z = c->op == Op::BitAnd ? (x & y) : c->op == Op::BitOr ? (x | y) : (x ^ y);
        if (t.is_int()) r.i = wrap_i(z, t.bits);
        else r.u = wrap_u(z, t.bits);
        return r;
    }
    case Op::BitNot: {
        uint64_t z = ~eval(c->kids[0], frame, slice).u;
        if (t.is_int()) r.i = wrap_i(z, t.bits);
        else r.u = wrap_u(z, t.bits);
        return r;
    }
    case Op::Shl:
    case Op::Shr: {
        Val a = eval(c->kids[0], frame, slice), b = eval(c->kids[1], frame, slice);
        // A negative amount shifts the other way; amounts of the width or
        // more shift everything out.
        int64_t s = t.is_int() ? b.i : static_cast<int64_t>(std::min<uint64_t>(b.u, 64));
        bool left = c->op == Op::Shl;
        if (s < 0) {
            left = !left;
            s = s < -64 ? 64 : -s;
        }
        uint64_t z;
        if (left) {
            z = s >= 64 ? 0 : a.u << s;
        } else if (t.is_int()) {
            z = static_cast<uint64_t>(s >= 64 ? (a.i < 0 ? -1 : 0) : a.i >> s);
        } else {
            z = s >= 64 ? 0 : a.u >> s;
        }
        if (t.is_int()) r.i = wrap_i(z, t.bits);
        else r.u = wrap_u(z, t.bits);
        return r;
    }
    case Op::Identity: return eval(c->kids[0], frame, slice);
    case Op::DivRoundUp: {
        Val a = eval(c->kids[0], frame, slice), b = eval(c->kids[1], frame, slice);
        if (t.is_int()) r.i = wrap_i(static_cast<uint64_t>(div_imp(a.i + b.i - 1, b.i)), t.bits);
        else r.u = wrap_u(b.u ? (a.u + b.u - 1) / b.u : 0, t.bits);
        return r;
    }
    }
    internal_error << "interpreter: unknown op";
}

std::vector<Val> Interp::eval_init(FuncState *st, const int *c) {
    std::vector<Val> frame(std::max(st->init_frame, 1));
    for (int i = 0; i < st->dims; i++) frame[i].i = c[i];
    std::vector<Val> v(st->outs);
    for (int o = 0; o < st->outs; o++) v[o] = eval(st->init[o], frame.data(), nullptr);
    return v;
}

int64_t Interp::cell_index(FuncState *st, const Slice *s, const int *c) const {
    int64_t idx = 0;
    for (size_t j = 0; j < st->box_dims.size(); j++) {
        int64_t x = static_cast<int64_t>(c[st->box_dims[j]]) - s->lo[j];
        if (x < 0 || x >= s->extent[j]) return -1;
        idx += x * s->stride[j];
    }
    return idx;
}

void Interp::init_cell(FuncState *st, Slice *s, int64_t cell) {
    // The coordinates of the cell: the slice's key plus the box position.
    std::vector<int> c = s->point;
    int64_t rest = cell;
    for (size_t j = 0; j < st->box_dims.size(); j++) {
        c[st->box_dims[j]] = static_cast<int>(s->lo[j] + rest / s->stride[j]);
        rest %= s->stride[j];
    }
    std::vector<Val> v = eval_init(st, c.data());
    for (int o = 0; o < st->outs; o++) s->data[cell * st->outs + o] = v[o];
    s->has[cell] = 1;
}

// Grows the box of s (over st's box dims) to every point the updates write
// or read of the Func itself.
void Interp::compute_box(FuncState *st, Slice *s) {
    size_t nb = st->box_dims.size();
    std::vector<int64_t> lo(nb), hi(nb);
    for (size_t j = 0; j < nb; j++) {
        lo[j] = s->lo[j];
        hi[j] = static_cast<int64_t>(s->lo[j]) + s->extent[j] - 1;  // empty when hi < lo
    }
    bool changed = false;
    auto include = [&](size_t j, int64_t x) {
        if (hi[j] < lo[j]) {
            lo[j] = hi[j] = x;
            changed = true;
        } else if (x < lo[j]) {
            lo[j] = x;
            changed = true;
        } else if (x > hi[j]) {
            hi[j] = x;
            changed = true;
        }
    };
    while (true) {
        changed = false;
        for (const Update &u : st->updates) {
            std::vector<Val> frame(std::max(u.frame, 1));
            for (int i : st->slice_dims) frame[i].i = s->point[i];
            std::vector<Loop> loops;
            bool empty = false;
            for (size_t j = 0; j < nb; j++) {
                int d = st->box_dims[j];
                if (!u.pure_at[d]) continue;
                if (hi[j] < lo[j]) empty = true;
                loops.push_back({d, static_cast<int>(lo[j]), static_cast<int>(hi[j] - lo[j] + 1)});
            }
            if (empty) continue;
            for (size_t k = 0; k < u.rmin.size(); k++) {
                loops.push_back({st->dims + static_cast<int>(k), u.rmin[k], u.rextent[k]});
            }
            for_each_point(loops, frame.data(), [&]() {
                if (u.predicate && !u.predicate_reads_self &&
                    !eval(u.predicate, frame.data(), nullptr).u) {
                    return;
                }
                for (size_t j = 0; j < nb; j++) {
                    int d = st->box_dims[j];
                    if (u.pure_at[d]) continue;
                    include(j, eval(u.args[d], frame.data(), nullptr).i);
                }
                for (const Code *sc : u.self_calls) {
                    for (size_t j = 0; j < nb; j++) {
                        int d = st->box_dims[j];
                        if (u.pure_at[d]) continue;
                        include(j, eval(sc->kids[d], frame.data(), nullptr).i);
                    }
                }
            });
        }
        if (!changed || !st->needs_fixed_point) break;
    }
    // Cells are laid out with the last box dim innermost.
    int64_t cells = 1;
    s->stride.assign(nb, 0);
    for (int j = static_cast<int>(nb) - 1; j >= 0; j--) {
        int64_t ext = hi[j] < lo[j] ? 0 : hi[j] - lo[j] + 1;
        user_assert(ext < (int64_t(1) << 31))
            << "Func " << st->fn->name << ": its update definitions touch a range of " << ext
            << " points in dimension " << st->box_dims[j] << ", too many for the interpreter.";
        s->lo[j] = hi[j] < lo[j] ? 0 : static_cast<int>(lo[j]);
        s->extent[j] = static_cast<int>(ext);
        s->stride[j] = std::max<int64_t>(cells, 1);
        cells *= ext;
        user_assert(cells <= (int64_t(1) << 30))
            << "Func " << st->fn->name << ": its update definitions touch too many points ("
            << "a box of more than 2^30) for the interpreter.";
    }
    user_assert(cells <= (int64_t(1) << 30))
        << "Func " << st->fn->name << ": its update definitions touch " << cells
        << " points, too many for the interpreter.";
    s->cells = cells;
}

std::unique_ptr<Slice> Interp::materialize(FuncState *st, const int *c, const Slice *old) {
    auto s = std::make_unique<Slice>();
    s->point.assign(c, c + st->dims);
    size_t nb = st->box_dims.size();
    s->lo.assign(nb, 0);
    s->extent.assign(nb, 0);
    // Seed the box along request-driven dims with the requested point, the
    // old box and the hint region; other box dims start empty, as only the
    // updates' writes and reads matter there.
    for (size_t j = 0; j < nb; j++) {
        if (!st->request_driven[j]) continue;
        int d = st->box_dims[j];
        int64_t lo = c[d], hi = c[d];
        if (old && old->extent[j] > 0) {
            lo = std::min<int64_t>(lo, old->lo[j]);
            hi = std::max<int64_t>(hi, static_cast<int64_t>(old->lo[j]) + old->extent[j] - 1);
        }
        if (!st->hint_min.empty() && st->hint_extent[d] > 0) {
            lo = std::min<int64_t>(lo, st->hint_min[d]);
            hi = std::max<int64_t>(hi,
                                   static_cast<int64_t>(st->hint_min[d]) + st->hint_extent[d] - 1);
        }
        s->lo[j] = static_cast<int>(lo);
        s->extent[j] = static_cast<int>(hi - lo + 1);
    }
    if (nb > 0) {
        compute_box(st, s.get());
    } else {
        s->cells = 1;
    }
    s->data.resize(s->cells * st->outs);
    s->has.assign(s->cells, 0);
    s->busy = true;

    std::vector<Val> values(st->outs);
    for (const Update &u : st->updates) {
        std::vector<Val> frame(std::max(u.frame, 1));
        for (int i : st->slice_dims) frame[i].i = s->point[i];
        std::vector<Loop> loops;
        bool empty = false;
        for (size_t j = 0; j < nb; j++) {
            int d = st->box_dims[j];
            if (!u.pure_at[d]) continue;
            if (s->extent[j] <= 0) empty = true;
            loops.push_back({d, s->lo[j], s->extent[j]});
        }
        if (empty) continue;
        for (size_t k = 0; k < u.rmin.size(); k++) {
            loops.push_back({st->dims + static_cast<int>(k), u.rmin[k], u.rextent[k]});
        }
        int coords[kMaxDims];
        for (int i = 0; i < st->dims; i++) coords[i] = s->point[i];
        for_each_point(loops, frame.data(), [&]() {
            if (u.predicate && !eval(u.predicate, frame.data(), s.get()).u) return;
            // Every value is computed before any is stored, as a Tuple update
            // reads the old values of all its elements.
            for (int o = 0; o < st->outs; o++) values[o] = eval(u.values[o], frame.data(), s.get());
            for (int d = 0; d < st->dims; d++) {
                coords[d] = static_cast<int>(eval(u.args[d], frame.data(), s.get()).i);
            }
            int64_t cell = cell_index(st, s.get(), coords);
            internal_assert(cell >= 0)
                << "interpreter: update of " << st->fn->name << " writes "
                << point_to_string(coords, st->dims) << " outside the box it computed";
            for (int o = 0; o < st->outs; o++) s->data[cell * st->outs + o] = values[o];
            s->has[cell] = 1;
        });
    }
    s->busy = false;
    return s;
}

Val Interp::get(FuncState *st, const int *c, int vi) {
    if (!st->compiled) compile_func(st);
    if (st->updates.empty() || st->box_dims.empty()) {
        st->scratch.assign(c, c + st->dims);
        auto it = st->memo.find(st->scratch);
        if (it != st->memo.end()) return it->second[vi];
        std::vector<int> key(c, c + st->dims);
        std::vector<Val> v;
        if (st->updates.empty()) {
            v = eval_init(st, c);
        } else {
            std::unique_ptr<Slice> s = materialize(st, c, nullptr);
            if (!s->has[0]) init_cell(st, s.get(), 0);
            v.assign(s->data.begin(), s->data.begin() + st->outs);
        }
        Val r = v[vi];
        st->memo.emplace(std::move(key), std::move(v));
        return r;
    }
    std::vector<int> key;
    for (int d : st->slice_dims) key.push_back(c[d]);
    auto it = st->slices.find(key);
    Slice *s = it == st->slices.end() ? nullptr : it->second.get();
    bool rebuild = !s;
    if (s) {
        user_assert(!s->busy) << "Func " << st->fn->name
                              << " depends on itself through other Funcs; the interpreter cannot "
                                 "evaluate that.";
        for (size_t j = 0; j < st->box_dims.size(); j++) {
            int x = c[st->box_dims[j]];
            if (st->request_driven[j] &&
                (x < s->lo[j] ||
                 static_cast<int64_t>(x) >= static_cast<int64_t>(s->lo[j]) + s->extent[j])) {
                rebuild = true;
            }
        }
    }
    if (rebuild) {
        std::unique_ptr<Slice> fresh = materialize(st, c, s);
        s = fresh.get();
        st->slices[key] = std::move(fresh);
    }
    int64_t cell = cell_index(st, s, c);
    if (cell < 0) {
        // No update touches this point: it keeps its pure definition's value.
        return eval_init(st, c)[vi];
    }
    if (!s->has[cell]) init_cell(st, s, cell);
    return s->data[cell * st->outs + vi];
}

}  // namespace

// ---------------------------------------------------------------------------
// Entry points.

void interpret_functions(const std::vector<FunctionPtr> &outputs,
                         const std::vector<RawBuffer> &buffers) {
    for (const FunctionPtr &f : outputs) {
        user_assert(f && f->init.defined())
            << "Cannot interpret Func " << (f ? f->name : std::string("<null>"))
            << ": it is not defined.";
    }
    // Rejects cycles between Funcs and distinct Funcs sharing a name, which
    // would otherwise make evaluation recurse forever or mix Funcs up.
    std::map<std::string, FunctionPtr> env = find_transitive_calls(outputs);
    realization_order(outputs, env);

    size_t expected = 0;
    for (const FunctionPtr &f : outputs) expected += f->output_types.size();
    if (buffers.size() != expected) {
        runtime_error_report << "interpret_into: the outputs have " << expected
                             << " values in all but " << buffers.size() << " buffers were given.";
    }
    Interp interp;
    size_t bi = 0;
    for (const FunctionPtr &f : outputs) {
        int outs = static_cast<int>(f->output_types.size());
        int dims = static_cast<int>(f->args.size());
        const RawBuffer &b0 = buffers[bi];
        for (int o = 0; o < outs; o++) {
            const RawBuffer &b = buffers[bi + o];
            if (!b.defined()) {
                runtime_error_report << "The output buffer for Func " << f->name
                                     << " is undefined.";
            }
            if (b.type() != f->output_types[o]) {
                runtime_error_report << "The output buffer " << b.name() << " for Func " << f->name
                                     << " holds " << type_to_string(b.type()) << " but " << f->name
                                     << (outs > 1 ? " output " + std::to_string(o) : "") << " is "
                                     << type_to_string(f->output_types[o]) << ".";
            }
            if (b.dimensions() != dims) {
                runtime_error_report << "The output buffer " << b.name() << " for Func " << f->name
                                     << " has " << b.dimensions() << " dimensions but " << f->name
                                     << " has " << dims << ".";
            }
            for (int d = 0; d < dims; d++) {
                if (b.dim_min(d) != b0.dim_min(d) || b.extent(d) != b0.extent(d)) {
                    runtime_error_report << "The output buffers of Tuple Func " << f->name
                                         << " must all cover the same region.";
                }
            }
        }
        FuncState *st = interp.state(f.get());
        st->hint_min.clear();
        st->hint_extent.clear();
        std::vector<Loop> loops;
        for (int d = 0; d < dims; d++) {
            st->hint_min.push_back(b0.dim_min(d));
            st->hint_extent.push_back(b0.extent(d));
            loops.push_back({d, b0.dim_min(d), b0.extent(d)});
        }
        std::vector<Val> frame(std::max(dims, 1));
        std::vector<int> coords(std::max(dims, 1));
        for_each_point(loops, frame.data(), [&]() {
            for (int d = 0; d < dims; d++) coords[d] = static_cast<int>(frame[d].i);
            for (int o = 0; o < outs; o++) {
                Val v = interp.get(st, coords.data(), o);
                const RawBuffer &b = buffers[bi + o];
                std::vector<int> c(coords.begin(), coords.begin() + dims);
                store_elem(b.type(), b.address_of(c), v);
            }
        });
        bi += outs;
    }
}

double load_element(Type t, const uint8_t *p) {
    const Val v = load_elem(t, p);
    return t.is_float() ? v.f : t.is_int() ? static_cast<double>(v.i) : static_cast<double>(v.u);
}

void store_element(Type t, uint8_t *p, double x) {
    Val v;
    if (t.is_float()) v.f = x;
    else if (t.is_int()) v.i = static_cast<int64_t>(x);
    else v.u = static_cast<uint64_t>(x);
    store_elem(t, p, v);
}

Expr evaluate_expr(const Expr &e, const std::map<std::string, Expr> &env) {
    user_assert(e.defined()) << "evaluate_expr of an undefined Expr.";
    Interp interp;
    Scope<int> slots;
    int n = 0;
    std::vector<Val> frame;
    for (const auto &kv : env) {
        const Expr &v = kv.second;
        Val x;
        if (const IntImm *i = v.as<IntImm>()) x.i = i->value;
        else if (const UIntImm *u = v.as<UIntImm>()) x.u = u->value;
        else if (const FloatImm *f = v.as<FloatImm>()) x.f = f->value;
        else user_error << "evaluate_expr: the value of " << kv.first << " is not a constant.";
        frame.push_back(x);
        slots.push(kv.first, n++);
    }
    const Code *c = interp.compile(e, slots, n, nullptr, "evaluate_expr");
    frame.resize(std::max(n, 1));
    // Convert each bound constant to the type the Expr uses for it, so that a
    // caller may bind an int32 constant to, say, an int16 variable.
    std::map<std::string, Type> used;
    struct Types : IRVisitor {
        std::map<std::string, Type> *used;
        using IRVisitor::visit;
        void visit(const Variable *op) override { (*used)[op->name] = op->type; }
    } types;
    types.used = &used;
    e.accept(&types);
    int k = 0;
    for (const auto &kv : env) {
        auto it = used.find(kv.first);
        if (it != used.end() && it->second != kv.second.type()) {
            frame[k] = cast_val(kv.second.type(), it->second, frame[k]);
        }
        k++;
    }
    Val r = interp.eval(c, frame.data(), nullptr);
    return val_to_expr(e.type(), r);
}

}  // namespace internal

// ---------------------------------------------------------------------------
// Public API.

std::vector<RawBuffer> interpret_tuple(const Func &f, const std::vector<int> &sizes) {
    user_assert(f.defined()) << "Cannot interpret Func " << f.name() << ": it is not defined.";
    if (static_cast<int>(sizes.size()) != f.dimensions()) {
        runtime_error_report << "interpret: Func " << f.name() << " has " << f.dimensions()
                             << " dimensions but " << sizes.size() << " sizes were given.";
    }
    std::vector<RawBuffer> bufs;
    std::vector<Type> types = f.output_types();
    for (size_t o = 0; o < types.size(); o++) {
        bufs.emplace_back(types[o], sizes,
                          types.size() == 1 ? f.name() : f.name() + "." + std::to_string(o));
    }
    internal::interpret_functions({f.function()}, bufs);
    return bufs;
}

RawBuffer interpret(const Func &f, const std::vector<int> &sizes) {
    user_assert(!f.defined() || f.outputs() == 1)
        << "Func " << f.name() << " returns a Tuple of " << f.outputs()
        << " values; use interpret_tuple().";
    return interpret_tuple(f, sizes)[0];
}

void interpret_into(const std::vector<Func> &outputs, const std::vector<RawBuffer> &out_buffers) {
    std::vector<internal::FunctionPtr> fs;
    for (const Func &f : outputs) fs.push_back(f.function());
    internal::interpret_functions(fs, out_buffers);
}

}  // namespace loom
