// GPU C++ of expressions and plain statements (see the header). Integer
// division and modulo keep Loom's semantics (rounding toward -inf, x / 0 ==
// 0), through helpers in the source's prelude; float min and max are
// fmin and fmax, which take the number of a NaN and a number, as the IR
// says; 16-bit floats convert, compare and compute through float.
#include "codegen/CodeGen_GPU_C.h"

#include <cctype>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <memory>

#include "fusion/AssociativeUpdates.h"
#include "ir/IRMutator.h"
#include "ir/IRPrinter.h"
#include "ir/Util.h"
#include "loom/Error.h"
#include "loom/IROperator.h"

namespace loom {
namespace internal {

namespace {

std::string cuda_launch_bounds(int threads, int blocks_per_sm) {
    std::string s = "__launch_bounds__(" + std::to_string(threads);
    if (blocks_per_sm > 0) s += ", " + std::to_string(blocks_per_sm);
    return s + ")";
}

// HIP's second argument is the least number of waves per execution unit,
// not blocks per SM: a count asked for CUDA is not passed on.
std::string hip_launch_bounds(int threads, int) {
    return "__launch_bounds__(" + std::to_string(threads) + ")";
}

const GpuDialectInfo kCuda = {"CUDA",
                              "__half",
                              "__nv_bfloat16",
                              "#include <cuda_fp16.h>\n#include <cuda_bf16.h>\n",
                              "__half_as_ushort(",
                              "__ushort_as_half(",
                              "__bfloat16_as_ushort(",
                              "__ushort_as_bfloat16(",
                              "__trap()",
                              "__syncthreads()",
                              32,
                              cuda_launch_bounds};

const GpuDialectInfo kHip = {"HIP",
                             "__half",
                             "__hip_bfloat16",
                             "#include <hip/hip_fp16.h>\n#include <hip/hip_bf16.h>\n",
                             "__half_as_ushort(",
                             "__ushort_as_half(",
                             "__bfloat16_as_ushort(",
                             "__ushort_as_bfloat16(",
                             "__builtin_trap()",
                             "__syncthreads()",
                             64,
                             hip_launch_bounds};

bool is_float16(Type t) { return t.is_float() && t.bits == 16; }

/** The scalar expression for one lane of the vector expression e: e's
 * vector operands are replaced by the variables loom.lane.0, .1, ... (of
 * their element types), and collected in `operands`. */
class LaneOf : public IRMutator {
  public:
    std::vector<Expr> operands;
    static std::string lane_name(size_t k) { return "loom.lane." + std::to_string(k); }

    Expr mutate(const Expr &e) override {
        if (depth == 0) {
            depth++;
            Expr r = IRMutator::mutate(e);
            depth--;
            return r;
        }
        if (e.type().is_scalar()) return e;
        operands.push_back(e);
        return Variable::make(e.type().element_of(), lane_name(operands.size() - 1));
    }
    using IRMutator::mutate;

  private:
    int depth = 0;
    using IRMutator::visit;
    Expr visit(const Cast *op) override {
        return Cast::make(op->type.element_of(), mutate(op->value));
    }
    Expr visit(const Reinterpret *op) override {
        return Reinterpret::make(op->type.element_of(), mutate(op->value));
    }
    Expr visit(const Call *op) override {
        std::vector<Expr> args;
        for (const Expr &a : op->args) args.push_back(mutate(a));
        return Call::make(op->type.element_of(), op->name, args, op->call_type, op->func,
                          op->value_index, op->param, op->buffer);
    }
};

}  // namespace

const GpuDialectInfo &gpu_dialect_info(GpuDialect dialect) {
    return dialect == GpuDialect::HIP ? kHip : kCuda;
}

CodeGen_GPU_C::CodeGen_GPU_C(GpuDialect d, const std::string &where)
    : dialect(gpu_dialect_info(d)), where_(where) {}

std::string CodeGen_GPU_C::print(const Expr &e) {
    std::ostringstream saved;
    std::swap(saved, expr_out);
    e.accept(this);
    std::swap(saved, expr_out);
    return saved.str();
}

std::string CodeGen_GPU_C::type(Type t) {
    uses_vectors |= t.is_vector();
    if (t.is_vector()) {
        return "loom_vec<" + type(t.element_of()) + ", " + std::to_string(t.lanes) + ">";
    }
    if (t.is_bool()) return "bool";
    if (t.is_handle()) return "void *";
    if (t.code == Type::Float && t.bits == 16) return dialect.float16;
    if (t.is_bfloat() && t.bits == 16) return dialect.bfloat16;
    if (t.code == Type::Float && t.bits == 32) return "float";
    if (t.code == Type::Float && t.bits == 64) return "double";
    if (t.is_int()) {
        switch (t.bits) {
        case 8: return "signed char";
        case 16: return "short";
        case 32: return "int";
        case 64: return "long long";
        }
    }
    if (t.is_uint()) {
        switch (t.bits) {
        case 8: return "unsigned char";
        case 16: return "unsigned short";
        case 32: return "unsigned int";
        case 64: return "unsigned long long";
        }
    }
    user_error << "The type " << type_to_string(t) << " inside a GPU kernel (" << where()
               << ") is not supported yet by the " << dialect.name << " backend.";
    return "";
}

std::string CodeGen_GPU_C::declare_local(const std::string &n) {
    auto it = c_names.find(n);
    if (it != c_names.end()) return it->second;
    std::string c = unique_c_name(n);
    c_names[n] = c;
    return c;
}

std::string CodeGen_GPU_C::name_of(const std::string &n) const {
    auto it = c_names.find(n);
    if (it != c_names.end()) return it->second;
    internal_assert(free_names) << dialect.name << " codegen: no C name for " << n;
    return free_names(n);
}

CodeGen_GPU_C::Local::Local(CodeGen_GPU_C &p, const std::string &n, bool flat)
    : p(p), n(n), flat(flat) {
    auto it = p.c_names.find(n);
    shadows = it != p.c_names.end();
    if (shadows) previous = it->second;
    c = p.unique_c_name(n);
    p.c_names[n] = c;
}

CodeGen_GPU_C::Local::~Local() {
    // Free for later, disjoint scopes.
    if (flat) p.c_block_names.back().push_back(c);
    else p.used.erase(c);
    if (shadows) p.c_names[n] = previous;
    else p.c_names.erase(n);
}

void CodeGen_GPU_C::close_block() {
    for (const std::string &c : c_block_names.back()) used.erase(c);
    c_block_names.pop_back();
}

std::string CodeGen_GPU_C::unique_c_name(const std::string &n) {
    std::string c = c_identifier(n);
    if (c.empty() || std::isdigit(static_cast<unsigned char>(c[0]))) c = "_" + c;
    c += "_";  // never a keyword or builtin (min, int, threadIdx)
    std::string base = c;
    for (int k = 1; used.count(c); k++) c = base + std::to_string(k);
    used.insert(c);
    return c;
}

// ---- expressions

void CodeGen_GPU_C::visit(const IntImm *op) {
    // The least value has no literal of its type: -2147483648 negates
    // 2147483648, a long, and makes what it meets a long too.
    const bool least = (op->type.bits == 64 && op->value == INT64_MIN) ||
                       (op->type.bits == 32 && op->value == INT32_MIN);
    const char *suffix = op->type.bits == 64 ? "LL" : "";
    if (least) expr_out << "(" << op->value + 1 << suffix << " - 1" << suffix << ")";
    else if (op->type.bits == 64 || op->type.bits == 32) expr_out << op->value << suffix;
    else expr_out << "(" << type(op->type) << ")(" << op->value << ")";
}

void CodeGen_GPU_C::visit(const UIntImm *op) {
    if (op->type.is_bool()) expr_out << (op->value ? "true" : "false");
    else if (op->type.bits == 64) expr_out << op->value << "ULL";
    else expr_out << "(" << type(op->type) << ")(" << op->value << "U)";
}

void CodeGen_GPU_C::visit(const FloatImm *op) {
    if (is_float16(op->type)) {
        // Converted from the float32 constant (exact for every value of
        // the 16-bit type).
        expr_out << "((" << type(op->type) << ")(" << print(FloatImm::make(Float(32), op->value))
                 << "))";
        return;
    }
    const bool f32 = op->type.bits == 32;
    user_assert(op->type.code == Type::Float && (f32 || op->type.bits == 64))
        << "The type " << type_to_string(op->type) << " inside a GPU kernel (" << where()
        << ") is not supported yet by the " << dialect.name << " backend.";
    double v = op->value;
    if (std::isnan(v)) {
        expr_out << (f32 ? "__int_as_float(0x7fc00000)"
                         : "__longlong_as_double(0x7ff8000000000000LL)");
    } else if (std::isinf(v)) {
        if (f32) expr_out << (v > 0 ? "__int_as_float(0x7f800000)" : "__int_as_float(0xff800000)");
        else
            expr_out << (v > 0 ? "__longlong_as_double(0x7ff0000000000000LL)"
                               : "__longlong_as_double(0xfff0000000000000LL)");
    } else {
        char buf[64];
        // Hexadecimal: exact, and no locale or rounding surprises.
        std::snprintf(buf, sizeof buf, "%a", f32 ? static_cast<double>(static_cast<float>(v)) : v);
        expr_out << buf << (f32 ? "f" : "");
    }
}

void CodeGen_GPU_C::visit(const StringImm *) {
    user_error << "A string inside a GPU kernel (" << where() << ") is not supported.";
}

void CodeGen_GPU_C::visit(const Cast *op) {
    if (lanewise(Expr(op))) return;
    // 16-bit floats convert to and from everything through float.
    if (is_float16(op->type) || is_float16(op->value.type())) {
        expr_out << "((" << type(op->type) << ")((float)(" << print(op->value) << ")))";
        return;
    }
    expr_out << "((" << type(op->type) << ")(" << print(op->value) << "))";
}

void CodeGen_GPU_C::visit(const Reinterpret *op) {
    if (lanewise(Expr(op))) return;
    Type from = op->value.type(), to = op->type;
    std::string v = print(op->value);
    if (is_float16(from)) {
        expr_out << "((" << type(to) << ")"
                 << (from.is_bfloat() ? dialect.bfloat16_as_bits : dialect.float16_as_bits) << v
                 << "))";
        return;
    }
    if (is_float16(to)) {
        expr_out << (to.is_bfloat() ? dialect.bits_as_bfloat16 : dialect.bits_as_float16)
                 << "(unsigned short)(" << v << "))";
        return;
    }
    if (from.is_float() && to.bits == 32)
        expr_out << "((" << type(to) << ")__float_as_int(" << v << "))";
    else if (to.is_float() && from.bits == 32) expr_out << "__int_as_float((int)(" << v << "))";
    else if (from.is_float() && to.bits == 64)
        expr_out << "((" << type(to) << ")__double_as_longlong(" << v << "))";
    else if (to.is_float() && from.bits == 64)
        expr_out << "__longlong_as_double((long long)(" << v << "))";
    else expr_out << "((" << type(to) << ")(" << v << "))";
}

void CodeGen_GPU_C::visit(const Variable *op) { expr_out << name_of(op->name); }

bool CodeGen_GPU_C::lanewise(const Expr &e) {
    if (e.type().is_scalar()) return false;
    uses_vectors = true;
    LaneOf lane;
    Expr scalar = lane.mutate(e);
    std::vector<std::string> args;
    for (const Expr &o : lane.operands) args.push_back(print(o));
    expr_out << "loom_map([&](";
    std::vector<std::unique_ptr<Local>> params;
    for (size_t k = 0; k < lane.operands.size(); k++) {
        params.push_back(std::make_unique<Local>(*this, LaneOf::lane_name(k)));
        expr_out << (k ? ", " : "") << type(lane.operands[k].type().element_of()) << " "
                 << params.back()->name();
    }
    expr_out << ") { return " << print(scalar) << "; }";
    for (const std::string &a : args) expr_out << ", " << a;
    expr_out << ")";
    return true;
}

std::string CodeGen_GPU_C::reduce_lambda(VectorReduce::Op o, Type t) {
    Expr a = Variable::make(t, "loom.reduce.a"), b = Variable::make(t, "loom.reduce.b");
    Expr combined = combine(o, a, b);
    Local pa(*this, "loom.reduce.a"), pb(*this, "loom.reduce.b");
    return "[&](" + type(t) + " " + pa.name() + ", " + type(t) + " " + pb.name() + ") { return " +
           print(combined) + "; }";
}

void CodeGen_GPU_C::binary(const Expr &a, const char *o, const Expr &b, Type t) {
    internal_assert(t.is_scalar()) << dialect.name << " codegen: vector operands reach binary()";
    std::string s = "(" + print(a) + " " + o + " " + print(b) + ")";
    // C promotes narrow integers to int: wrap back to the type.
    if (t.is_int_or_uint() && !t.is_bool() && t.bits < 32) s = "((" + type(t) + ")" + s + ")";
    expr_out << s;
}

void CodeGen_GPU_C::visit(const Add *op) {
    if (lanewise(Expr(op))) return;
    binary(op->a, "+", op->b, op->type);
}
void CodeGen_GPU_C::visit(const Sub *op) {
    if (lanewise(Expr(op))) return;
    binary(op->a, "-", op->b, op->type);
}
void CodeGen_GPU_C::visit(const Mul *op) {
    if (lanewise(Expr(op))) return;
    binary(op->a, "*", op->b, op->type);
}
void CodeGen_GPU_C::visit(const Div *op) {
    if (lanewise(Expr(op))) return;
    if (op->type.is_float()) return binary(op->a, "/", op->b, op->type);
    expr_out << "loom_div<" << type(op->type) << ">(" << print(op->a) << ", " << print(op->b)
             << ")";
}
void CodeGen_GPU_C::visit(const Mod *op) {
    if (lanewise(Expr(op))) return;
    if (is_float16(op->type)) {
        expr_out << "((" << type(op->type) << ")loom_fmod((float)(" << print(op->a) << "), (float)("
                 << print(op->b) << ")))";
        return;
    }
    if (op->type.is_float()) {
        expr_out << "loom_fmod(" << print(op->a) << ", " << print(op->b) << ")";
        return;
    }
    expr_out << "loom_mod<" << type(op->type) << ">(" << print(op->a) << ", " << print(op->b)
             << ")";
}
void CodeGen_GPU_C::min_max(const Expr &a, const Expr &b, Type t, bool is_min) {
    if (is_float16(t)) {
        expr_out << "((" << type(t) << ")" << (is_min ? "fminf" : "fmaxf") << "((float)("
                 << print(a) << "), (float)(" << print(b) << ")))";
        return;
    }
    if (t.is_float()) {
        // fmin/fmax ignore a NaN operand, as the CPU backend does.
        expr_out << (is_min ? "fmin" : "fmax") << (t.bits == 32 ? "f" : "") << "(" << print(a)
                 << ", " << print(b) << ")";
        return;
    }
    expr_out << (is_min ? "loom_min<" : "loom_max<") << type(t) << ">(" << print(a) << ", "
             << print(b) << ")";
}
void CodeGen_GPU_C::visit(const Min *op) {
    if (lanewise(Expr(op))) return;
    min_max(op->a, op->b, op->type, true);
}
void CodeGen_GPU_C::visit(const Max *op) {
    if (lanewise(Expr(op))) return;
    min_max(op->a, op->b, op->type, false);
}
void CodeGen_GPU_C::visit(const EQ *op) {
    if (lanewise(Expr(op))) return;
    binary(op->a, "==", op->b, op->type);
}
void CodeGen_GPU_C::visit(const NE *op) {
    if (lanewise(Expr(op))) return;
    binary(op->a, "!=", op->b, op->type);
}
void CodeGen_GPU_C::visit(const LT *op) {
    if (lanewise(Expr(op))) return;
    binary(op->a, "<", op->b, op->type);
}
void CodeGen_GPU_C::visit(const LE *op) {
    if (lanewise(Expr(op))) return;
    binary(op->a, "<=", op->b, op->type);
}
void CodeGen_GPU_C::visit(const GT *op) {
    if (lanewise(Expr(op))) return;
    binary(op->a, ">", op->b, op->type);
}
void CodeGen_GPU_C::visit(const GE *op) {
    if (lanewise(Expr(op))) return;
    binary(op->a, ">=", op->b, op->type);
}
void CodeGen_GPU_C::visit(const And *op) {
    if (lanewise(Expr(op))) return;
    binary(op->a, "&&", op->b, op->type);
}
void CodeGen_GPU_C::visit(const Or *op) {
    if (lanewise(Expr(op))) return;
    binary(op->a, "||", op->b, op->type);
}
void CodeGen_GPU_C::visit(const Not *op) {
    if (lanewise(Expr(op))) return;
    expr_out << "(!" << print(op->a) << ")";
}
void CodeGen_GPU_C::visit(const Select *op) {
    if (lanewise(Expr(op))) return;
    expr_out << "(" << print(op->condition) << " ? " << print(op->true_value) << " : "
             << print(op->false_value) << ")";
}

void CodeGen_GPU_C::visit(const Load *op) {
    // A plain element of an array; the kernel printers know their memories.
    internal_assert(op->type.is_scalar())
        << dialect.name << " codegen: a vector load of " << op->name << " outside a kernel";
    std::string load = name_of(op->name) + "[" + print(op->index) + "]";
    if (!is_const_one(op->predicate)) {
        load = "(" + print(op->predicate) + " ? " + load + " : " + type(op->type) + "())";
    }
    expr_out << load;
}

void CodeGen_GPU_C::visit(const Ramp *op) {
    uses_vectors = true;
    expr_out << "loom_ramp<" << op->lanes << ">(" << print(op->base) << ", " << print(op->stride)
             << ")";
}
void CodeGen_GPU_C::visit(const Broadcast *op) {
    uses_vectors = true;
    expr_out << "loom_broadcast<" << op->lanes << ">(" << print(op->value) << ")";
}
void CodeGen_GPU_C::visit(const VectorReduce *op) {
    uses_vectors = true;
    Type in = op->value.type();
    std::string f = reduce_lambda(op->op, in.element_of());
    if (op->type.is_scalar()) {
        expr_out << "loom_vreduce_all(" << f << ", " << print(op->value) << ")";
    } else {
        expr_out << "loom_vreduce<" << op->type.lanes << ">(" << f << ", " << print(op->value)
                 << ")";
    }
}

void CodeGen_GPU_C::visit(const Let *op) {
    // An expression with locals: an immediately invoked lambda, which
    // declares a chain of lets one after another.
    std::vector<std::unique_ptr<Local>> locals;
    std::string declarations;
    Expr e = op;
    while (const Let *let = e.as<Let>()) {
        std::string value = print(let->value);
        locals.push_back(std::make_unique<Local>(*this, let->name));
        declarations +=
            "const " + type(let->value.type()) + " " + locals.back()->name() + " = " + value + "; ";
        e = let->body;
    }
    std::string body = print(e);
    expr_out << "([&]() { " << declarations << "return " << body << "; }())";
    while (!locals.empty()) locals.pop_back();  // innermost first: each restores its outer name
}

void CodeGen_GPU_C::visit(const Call *op) {
    if (lanewise(Expr(op))) return;
    if (op->is_intrinsic(Call::likely) || op->is_intrinsic(Call::promise_clamped)) {
        expr_out << print(op->args[0]);
        return;
    }
    if (op->is_intrinsic(Call::abs)) {
        Type t = op->args[0].type();
        if (t.is_float() && t.bits == 16) {
            // __half and __nv_bfloat16 have no fabs of their own: through
            // float, as min and max go (fabs on one would pick a float
            // overload and leave a float the next operator cannot mix).
            expr_out << "((" << type(t) << ")fabsf((float)(" << print(op->args[0]) << ")))";
        } else if (t.is_float()) {
            expr_out << (t.bits == 32 ? "fabsf(" : "fabs(") << print(op->args[0]) << ")";
        } else {
            expr_out << "((" << type(op->type) << ")(" << print(op->args[0]) << " < 0 ? -"
                     << print(op->args[0]) << " : " << print(op->args[0]) << "))";
        }
        return;
    }
    static const std::map<std::string, const char *> bit_ops = {
        {Call::bitwise_and, "&"}, {Call::bitwise_or, "|"}, {Call::bitwise_xor, "^"}};
    const int64_t *signed_amount = op->args.size() == 2 ? as_const_int(op->args[1]) : nullptr;
    const uint64_t *unsigned_amount = op->args.size() == 2 ? as_const_uint(op->args[1]) : nullptr;
    if ((signed_amount && *signed_amount >= 0 && *signed_amount < op->type.bits) ||
        (unsigned_amount && *unsigned_amount < static_cast<uint64_t>(op->type.bits))) {
        // C++17 leaves a negative value shifted left undefined too.
        if (op->is_intrinsic(Call::shift_left) && op->type.is_uint())
            return binary(op->args[0], "<<", op->args[1], op->type);
        if (op->is_intrinsic(Call::shift_right))
            return binary(op->args[0], ">>", op->args[1], op->type);
    }
    if ((op->is_intrinsic(Call::shift_left) || op->is_intrinsic(Call::shift_right)) &&
        op->call_type != Call::Extern) {
        // C leaves shifts by negative amounts or the width undefined;
        // Loom's are total (loom_shift in the prelude).
        expr_out << "loom_shift<" << type(op->type) << ">(" << print(op->args[0]) << ", "
                 << print(op->args[1]) << ", "
                 << (op->is_intrinsic(Call::shift_left) ? "true" : "false") << ")";
        return;
    }
    auto b = bit_ops.find(op->name);
    if (b != bit_ops.end() && op->call_type != Call::Extern) {
        return binary(op->args[0], b->second, op->args[1], op->type);
    }
    if (op->is_intrinsic(Call::bitwise_not)) {
        expr_out << "((" << type(op->type) << ")(~" << print(op->args[0]) << "))";
        return;
    }
    if (op->is_intrinsic(Call::div_round_up)) {
        std::string a = print(op->args[0]), d = print(op->args[1]);
        expr_out << "loom_div<" << type(op->type) << ">(" << a << " + " << d << " - 1, " << d
                 << ")";
        return;
    }
    if (op->call_type == Call::PureIntrinsic) {
        size_t u = op->name.rfind('_');
        std::string fn = op->name.substr(0, u), sfx = op->name.substr(u + 1);
        static const std::set<std::string> math = {"exp",   "log", "sqrt",  "rsqrt",
                                                   "sin",   "cos", "floor", "ceil",
                                                   "round", "pow", "tanh",  "erf"};
        if (math.count(fn) && (sfx == "f32" || sfx == "f64")) {
            // round is rint: ties to even, as the interpreter rounds.
            std::string c = fn == "round" ? "rint" : fn;
            expr_out << c << (sfx == "f32" ? "f" : "") << "(";
            for (size_t i = 0; i < op->args.size(); i++) {
                expr_out << (i ? ", " : "") << print(op->args[i]);
            }
            expr_out << ")";
            return;
        }
    }
    user_error << "The call " << Expr(op) << " inside a GPU kernel (" << where()
               << ") is not supported yet by the " << dialect.name << " backend.";
}

// ---- statements

void CodeGen_GPU_C::visit(const LetStmt *op) {
    // Declared in the enclosing block, so that a chain of lets reads as a
    // sequence of declarations rather than a staircase of blocks.
    std::string value = print(op->value);
    Local n(*this, op->name, true);
    pad();
    out << "const " << type(op->value.type()) << " " << n.name() << " = " << value << ";\n";
    print(op->body);
}

void CodeGen_GPU_C::visit(const ProducerConsumer *op) {
    pad();
    out << "// " << (op->is_producer ? "produce " : "consume ") << op->name << "\n";
    print(op->body);
}

void CodeGen_GPU_C::visit(const Block *op) {
    print(op->first);
    print(op->rest);
}

void CodeGen_GPU_C::visit(const IfThenElse *op) {
    pad();
    out << "if (" << print(op->condition) << ") {\n";
    indent++;
    open_block();
    print(op->then_case);
    close_block();
    indent--;
    if (op->else_case.defined()) {
        pad();
        out << "} else {\n";
        indent++;
        open_block();
        print(op->else_case);
        close_block();
        indent--;
    }
    pad();
    out << "}\n";
}

void CodeGen_GPU_C::visit(const Evaluate *op) {
    pad();
    out << "(void)" << print(op->value) << ";\n";
}

void CodeGen_GPU_C::visit(const Provide *) {
    internal_error << "Provide in " << dialect.name << " codegen";
}
void CodeGen_GPU_C::visit(const Realize *) {
    internal_error << "Realize in " << dialect.name << " codegen";
}

std::string gpu_c_expr(const Expr &e, GpuDialect dialect,
                       const std::function<std::string(const std::string &)> &free_names,
                       const std::string &where) {
    CodeGen_GPU_C printer(dialect, where);
    printer.free_names = free_names;
    return printer.print(e);
}

}  // namespace internal
}  // namespace loom
