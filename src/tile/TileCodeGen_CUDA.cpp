// Tile programs to CUDA C++ (see the header).
#include "tile/TileCodeGen_CUDA.h"

#include <map>
#include <set>
#include <sstream>

#include "codegen/CudaSources.h"
#include "ir/IRPrinter.h"
#include "ir/IRVisitor.h"
#include "loom/Error.h"
#include "loom/IROperator.h"

namespace loom {
namespace internal {
namespace tile {

namespace {

std::string c_type(Type t) {
    if (t == Float(32)) return "float";
    if (t == Float(16)) return "__half";
    if (t == BFloat(16)) return "__nv_bfloat16";
    if (t == Int(32)) return "int";
    internal_error << "tile codegen: no C type for " << type_to_string(t);
    return "";
}

/** The C of the scalar Exprs tile programs hold: indices (Loom's integer
 * division and modulo, through the prelude), and maps' arithmetic. */
std::string c_expr(const Expr &e) {
    if (const IntImm *i = e.as<IntImm>()) return std::to_string(i->value);
    if (const FloatImm *f = e.as<FloatImm>()) {
        std::ostringstream s;
        s.precision(9);
        s << "float(" << f->value << ")";
        return s.str();
    }
    if (const Variable *v = e.as<Variable>()) return v->name;
    auto bin = [&](const Expr &a, const Expr &b, const char *op) {
        return "(" + c_expr(a) + " " + op + " " + c_expr(b) + ")";
    };
    if (const Add *o = e.as<Add>()) return bin(o->a, o->b, "+");
    if (const Sub *o = e.as<Sub>()) return bin(o->a, o->b, "-");
    if (const Mul *o = e.as<Mul>()) return bin(o->a, o->b, "*");
    if (const Div *o = e.as<Div>()) {
        if (o->type.is_float()) return bin(o->a, o->b, "/");
        return "loom_div(" + c_expr(o->a) + ", " + c_expr(o->b) + ")";
    }
    if (const Mod *o = e.as<Mod>()) return "loom_mod(" + c_expr(o->a) + ", " + c_expr(o->b) + ")";
    if (const Min *o = e.as<Min>()) return "loom_min(" + c_expr(o->a) + ", " + c_expr(o->b) + ")";
    if (const Max *o = e.as<Max>()) return "loom_max(" + c_expr(o->a) + ", " + c_expr(o->b) + ")";
    if (const Cast *c = e.as<Cast>()) {
        const Type from = c->value.type(), to = c->type;
        const std::string v = c_expr(c->value);
        if (to == Float(16) && from == Float(32)) return "__float2half_rn(" + v + ")";
        if (to == BFloat(16) && from == Float(32)) return "__float2bfloat16_rn(" + v + ")";
        if (to == Float(32) && from == Float(16)) return "__half2float(" + v + ")";
        if (to == Float(32) && from == BFloat(16)) return "__bfloat162float(" + v + ")";
        return "((" + c_type(to) + ")(" + v + "))";
    }
    internal_error << "tile codegen: cannot print " << e;
    return "";
}

/** The free variables of the Exprs of a program: its scalar parameters. */
struct FreeVariables : IRVisitor {
    std::set<std::string> names;
    using IRVisitor::visit;
    void visit(const Variable *op) override { names.insert(op->name); }
};

/** Code that sets `outs` (declared ints) to the layout's outputs at these
 * inputs: a constant for a constant input, else the XOR of the bases of
 * the runtime index's set bits. */
std::string apply_layout(const LinearLayout &l, const std::map<std::string, std::string> &runtime,
                         const std::map<std::string, int> &constant,
                         const std::vector<std::string> &outs, const std::string &pad) {
    std::vector<int> start(l.outs().size(), 0);
    for (const auto &in : l.ins()) {
        auto c = constant.find(in.name);
        if (c == constant.end()) continue;
        for (size_t b = 0; b < in.bases.size(); b++) {
            if ((c->second >> b) & 1) {
                for (size_t o = 0; o < start.size(); o++) start[o] ^= in.bases[b][o];
            }
        }
    }
    std::ostringstream s;
    for (size_t o = 0; o < outs.size(); o++) s << pad << outs[o] << " = " << start[o] << ";\n";
    for (const auto &in : l.ins()) {
        auto r = runtime.find(in.name);
        if (r == runtime.end()) continue;
        for (size_t b = 0; b < in.bases.size(); b++) {
            s << pad << "if ((" << r->second << ") & " << (1 << b) << ") {";
            for (size_t o = 0; o < outs.size(); o++) {
                if (in.bases[b][o]) s << " " << outs[o] << " ^= " << in.bases[b][o] << ";";
            }
            s << " }\n";
        }
    }
    return s.str();
}

bool same_layout(const TileType &t, const LinearLayout &l) {
    return t.layout && t.layout->to_string() == l.to_string();
}

class Emitter {
  public:
    Emitter(const TileProgram &p, const std::vector<TileBuffer> &buffers)
        : program(p), buffers(buffers) {}

    std::string kernel() {
        internal_assert(program.num_warps == 1)
            << "tile codegen: " << program.name << " has " << program.num_warps
            << " warps; one per program is translated today";
        internal_assert(program.grid.size() <= 3) << "tile codegen: a grid of more than 3 dims";
        // Scalars: what the Exprs read, less the grid and loop variables.
        FreeVariables free;
        std::set<std::string> bound(program.grid.begin(), program.grid.end());
        collect(program.body, &free, &bound);
        for (const std::string &b : bound) free.names.erase(b);
        std::ostringstream head;
        head << "extern \"C\" __global__ void __launch_bounds__(" << 32 * program.num_warps << ") "
             << program.name << "(";
        std::vector<std::string> params;
        for (const TileBuffer &b : buffers) {
            params.push_back(std::string(b.written ? "" : "const ") + c_type(b.elem) +
                             " *__restrict__ " + b.name);
        }
        for (const TileBuffer &b : buffers) params.push_back("const int " + b.name + "_stride");
        for (const std::string &s : free.names) params.push_back("const int " + s);
        for (size_t i = 0; i < params.size(); i++) head << (i ? ",\n    " : "") << params[i];
        head << ") {\n";
        head << "    extern __shared__ __align__(16) unsigned char loom_shared_memory[];\n";
        head << "    const int lane = threadIdx.x % 32;\n";
        const char *axes[] = {"x", "y", "z"};
        for (size_t i = 0; i < program.grid.size(); i++) {
            head << "    const int " << program.grid[i] << " = blockIdx." << axes[i] << ";\n";
        }
        stmts(program.body, 1);
        return head.str() + body.str() + "}\n";
    }

  private:
    const TileProgram &program;
    const std::vector<TileBuffer> &buffers;
    std::ostringstream body;
    std::map<std::string, TileType> values;
    int64_t shared_bytes = 0;

    void collect(const std::vector<TileStmt> &ss, FreeVariables *free,
                 std::set<std::string> *bound) {
        for (const TileStmt &s : ss) {
            if (s.loop) {
                bound->insert(s.loop->var);
                s.loop->min.accept(free);
                s.loop->extent.accept(free);
                collect(s.loop->body, free, bound);
            } else {
                for (const Expr &e : s.op->origin) e.accept(free);
                for (const Expr &e : s.op->bounds) e.accept(free);
            }
        }
    }

    const TileBuffer &buffer(const std::string &name) {
        for (const TileBuffer &b : buffers) {
            if (b.name == name) return b;
        }
        internal_error << "tile codegen: no buffer " << name;
        return buffers[0];
    }

    void stmts(const std::vector<TileStmt> &ss, int depth) {
        const std::string pad(4 * depth, ' ');
        for (const TileStmt &s : ss) {
            if (s.loop) {
                body << pad << "for (int " << s.loop->var << " = " << c_expr(s.loop->min) << "; "
                     << s.loop->var << " < " << c_expr(s.loop->min + s.loop->extent) << "; "
                     << s.loop->var << "++) {\n";
                stmts(s.loop->body, depth + 1);
                body << pad << "}\n";
            } else {
                op(*s.op, pad);
            }
        }
    }

    /** Declares the registers of a value the first time it is defined. */
    void registers(const TileOp &o, const std::string &c_elem, int count, const std::string &pad) {
        if (values.count(o.result)) return;
        body << pad << c_elem << " v_" << o.result << "[" << count << "];\n";
    }

    int register_count(const TileType &t) {
        internal_assert(t.layout) << "tile codegen: a value without a layout";
        return t.layout->in_size("register");
    }

    void op(const TileOp &o, const std::string &pad) {
        const std::string what = o.result.empty() ? "an op" : o.result;
        switch (o.kind) {
        case TileOpKind::Zeros: {
            const int n = register_count(o.type);
            registers(o, c_type(o.type.elem), n, pad);
            body << pad << "for (int i = 0; i < " << n << "; i++) v_" << o.result << "[i] = 0;\n";
            break;
        }
        case TileOpKind::AsyncCopy: async_copy(o, pad); break;
        case TileOpKind::AsyncCommit: body << pad << "loom_cp_async_commit();\n"; break;
        case TileOpKind::AsyncWait:
            body << pad << "loom_cp_async_wait<" << o.pending << ">();\n";
            break;
        case TileOpKind::Barrier: body << pad << "__syncthreads();\n"; break;
        case TileOpKind::ConvertLayout: convert(o, pad); break;
        case TileOpKind::Dot: {
            const TileType &a = values.at(o.operands[0]);
            internal_assert(same_layout(a, mma_m16n8k16_a()) &&
                            same_layout(values.at(o.operands[1]), mma_m16n8k16_b()) &&
                            same_layout(o.type, mma_m16n8k16_accumulator()) &&
                            o.type.elem == Float(32))
                << "tile codegen: dot " << what
                << " needs mma.sync fragments and an f32 accumulator";
            registers(o, "float", 4, pad);
            body << pad
                 << (a.elem == BFloat(16) ? "loom_mma_m16n8k16_bf16(" : "loom_mma_m16n8k16_f16(")
                 << "v_" << o.result << ", v_" << o.operands[0] << ", v_" << o.operands[1] << ", v_"
                 << o.operands[2] << ");\n";
            break;
        }
        case TileOpKind::Map: {
            const int n = register_count(o.type);
            registers(o, c_type(o.type.elem), n, pad);
            body << pad << "for (int i = 0; i < " << n << "; i++) {\n";
            for (size_t k = 0; k < o.operands.size(); k++) {
                body << pad << "    const auto _" << k << " = v_" << o.operands[k] << "[i];\n";
            }
            body << pad << "    v_" << o.result << "[i] = " << c_expr(o.fn) << ";\n"
                 << pad << "}\n";
            break;
        }
        case TileOpKind::Store: store(o, pad); break;
        default:
            internal_error << "tile codegen: " << what << " is an op the CUDA translation lacks";
        }
        if (!o.result.empty()) values[o.result] = o.type;
    }

    void async_copy(const TileOp &o, const std::string &pad) {
        internal_assert(o.type.elem.bits == 16 && o.type.shape.size() == 2 && o.type.layout &&
                        o.type.layout->ins().size() == 1 &&
                        o.type.layout->ins()[0].name == "offset")
            << "tile codegen: async_copy " << o.result
            << " copies 2-D tiles of 16-bit elements into a layout of shared offsets";
        const TileBuffer &b = buffer(o.buffer);
        const int64_t bytes = o.type.elements() * 2;
        if (!values.count(o.result)) {
            body << pad << c_type(o.type.elem) << " *s_" << o.result << " = reinterpret_cast<"
                 << c_type(o.type.elem) << " *>(loom_shared_memory + " << shared_bytes << ");\n";
            shared_bytes += (bytes + 15) / 16 * 16;
        }
        const int64_t chunks = o.type.elements() / 8;
        body << pad << "for (int ch = lane; ch < " << chunks << "; ch += " << 32 * program.num_warps
             << ") {\n";
        const std::string in = pad + "    ";
        body << in << "int r_ = 0, c_ = 0;\n"
             << apply_layout(*o.type.layout, {{"offset", "ch * 8"}}, {}, {"r_", "c_"}, in);
        body << in << "const int gr = " << c_expr(o.origin[0])
             << " + r_, gc = " << c_expr(o.origin[1]) << " + c_;\n";
        body << in << "const int left = gr < " << c_expr(o.bounds[0])
             << " ? loom_max(0, loom_min(8, " << c_expr(o.bounds[1]) << " - gc)) : 0;\n";
        body << in << "loom_cp_async_16(s_" << o.result << " + ch * 8, left ? " << b.name
             << " + gr * " << b.name << "_stride + gc : " << b.name << ", left * 2);\n";
        body << pad << "}\n";
    }

    void convert(const TileOp &o, const std::string &pad) {
        const TileType &from = values.at(o.operands[0]);
        internal_assert(from.space == MemorySpace::Shared && from.layout)
            << "tile codegen: convert_layout " << o.result
            << " reads shared memory into fragments (register-to-register conversions are not "
               "translated yet)";
        const LinearLayout where = from.layout->invert();  // (row, col) -> offset
        std::string call;
        int regs = 0;
        std::string row, col;
        if (same_layout(o.type, mma_m16n8k16_a())) {
            // Lane l gives row l % 8 of matrix l / 8: (rows, cols) blocks
            // (0, 0), (8, 0), (0, 8), (8, 8) as the fragment's a0..a3.
            call = "loom_ldmatrix_x4";
            regs = 4;
            row = "(lane / 8 % 2) * 8 + lane % 8";
            col = "(lane / 16) * 8";
        } else if (same_layout(o.type, mma_m16n8k16_b())) {
            // B's rows are k: lane l gives row l % 16; .trans makes the
            // columns the fragment's.
            call = "loom_ldmatrix_x2_trans";
            regs = 2;
            row = "lane % 16";
            col = "0";
        } else {
            internal_error << "tile codegen: convert_layout " << o.result
                           << " to a layout other than the mma.sync A or B fragment";
        }
        if (!values.count(o.result))
            body << pad << "unsigned v_" << o.result << "[" << regs << "];\n";
        body << pad << "{\n";
        const std::string in = pad + "    ";
        body << in << "int off_ = 0;\n"
             << apply_layout(where, {{"row", row}, {"col", col}}, {}, {"off_"}, in);
        body << in << call << "(v_" << o.result << ", s_" << o.operands[0] << " + off_);\n";
        body << pad << "}\n";
    }

    void store(const TileOp &o, const std::string &pad) {
        const TileType &v = values.at(o.operands[0]);
        const TileBuffer &b = buffer(o.buffer);
        internal_assert(v.layout && v.space == MemorySpace::Registers && v.elem == b.elem)
            << "tile codegen: store to " << o.buffer << " of a register tile of its type";
        const int n = register_count(v);
        for (int i = 0; i < n; i++) {
            body << pad << "{\n";
            const std::string in = pad + "    ";
            body << in << "int r_ = 0, c_ = 0;\n"
                 << apply_layout(*v.layout, {{"lane", "lane"}}, {{"register", i}}, {"r_", "c_"},
                                 in);
            body << in << "const int gr = " << c_expr(o.origin[0])
                 << " + r_, gc = " << c_expr(o.origin[1]) << " + c_;\n";
            body << in << "if (gr < " << c_expr(o.bounds[0]) << " && gc < " << c_expr(o.bounds[1])
                 << ") " << b.name << "[gr * " << b.name << "_stride + gc] = v_" << o.operands[0]
                 << "[" << i << "];\n";
            body << pad << "}\n";
        }
    }
};

}  // namespace

std::string tile_program_to_cuda(const TileProgram &p, const std::vector<TileBuffer> &buffers) {
    verify(p);
    return Emitter(p, buffers).kernel();
}

std::string tile_module_source(const std::vector<std::string> &kernels) {
    std::string s = "#include <cuda_fp16.h>\n#include <cuda_bf16.h>\n";
    s += cuda_source("prelude");
    s += cuda_source("mma");
    s += cuda_source("ldmatrix");
    s += cuda_source("cp_async");
    for (const std::string &k : kernels) s += k;
    return s;
}

}  // namespace tile
}  // namespace internal
}  // namespace loom
