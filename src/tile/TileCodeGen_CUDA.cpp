// Tile programs to CUDA C++ (see the header).
#include "tile/TileCodeGen_CUDA.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <set>
#include <sstream>

#include "arith/Simplify.h"
#include "codegen/CodeGen_GPU_C.h"
#include "codegen/CudaSources.h"
#include "ir/IREquality.h"
#include "ir/IRMutator.h"
#include "ir/IRPrinter.h"
#include "ir/IRVisitor.h"
#include "ir/Substitute.h"
#include "ir/Util.h"
#include "loom/Error.h"
#include "loom/IROperator.h"
#include "tile/LayoutConversion.h"

namespace loom {
namespace internal {
namespace tile {

namespace {

std::string c_type(Type t) {
    if (t == Float(32)) return "float";
    if (t == Float(64)) return "double";
    if (t == Float(16)) return "__half";
    if (t == BFloat(16)) return "__nv_bfloat16";
    if (t == Int(32)) return "int";
    if (t == Int(64)) return "long long";
    if (t == UInt(32)) return "unsigned";
    if (t == Bool()) return "bool";
    internal_error << "tile codegen: no C type for " << type_to_string(t);
    return "";
}

/** An integer's C, as a literal. */
std::string str(int64_t v) { return std::to_string(v); }

/** 16-bit floats are kept two to a 32-bit register, as mma.sync and
 * ldmatrix take them. */
bool packed(Type t) { return t == Float(16) || t == BFloat(16); }

/** The C of `v` (of type `from`) converted to `to`. */
std::string convert(const std::string &v, Type from, Type to) {
    if (from == to) return v;
    if (to == Float(16) && from == Float(32)) return "__float2half_rn(" + v + ")";
    if (to == BFloat(16) && from == Float(32)) return "__float2bfloat16_rn(" + v + ")";
    if (to == Float(32) && from == Float(16)) return "__half2float(" + v + ")";
    if (to == Float(32) && from == BFloat(16)) return "__bfloat162float(" + v + ")";
    internal_assert(!packed(to) && !packed(from))
        << "tile codegen: no conversion from " << type_to_string(from) << " to "
        << type_to_string(to);
    return "((" + c_type(to) + ")(" + v + "))";
}

/** A map's operand variables: _0, _1, ... */
bool is_operand_variable(const std::string &name) {
    return name.size() > 1 && name[0] == '_' &&
           std::all_of(name.begin() + 1, name.end(), [](char c) { return c >= '0' && c <= '9'; });
}

/** The free variables of Exprs, with their types. */
struct FreeVariables : IRVisitor {
    std::map<std::string, Type> types;
    using IRVisitor::visit;
    void visit(const Variable *op) override {
        // A map's own, typed per map, and its element's coordinates.
        if (is_operand_variable(op->name) || is_tile_coordinate(op->name)) return;
        auto [it, fresh] = types.emplace(op->name, op->type);
        internal_assert(fresh || it->second == op->type)
            << "tile codegen: variable " << op->name << " is read as " << type_to_string(it->second)
            << " and as " << type_to_string(op->type);
    }
};

/** The C identifiers of the program's names, each distinct, none a C++
 * keyword or in the translation's own prefix (loom_). */
class CNames {
  public:
    std::string add(const std::string &name) {
        std::string c = c_identifier(name);
        static const std::set<std::string> reserved = {
            "auto",    "bool",      "break",     "case",     "char",     "const",  "continue",
            "default", "do",        "double",    "else",     "extern",   "false",  "float",
            "for",     "goto",      "if",        "inline",   "int",      "long",   "return",
            "short",   "signed",    "sizeof",    "static",   "struct",   "switch", "template",
            "this",    "true",      "typedef",   "union",    "unsigned", "void",   "volatile",
            "while",   "threadIdx", "blockIdx",  "blockDim", "gridDim",  "asm",    "new",
            "delete",  "class",     "namespace", "operator", "private",  "public", "using"};
        if (c.empty() || (c[0] >= '0' && c[0] <= '9') || reserved.count(c) ||
            c.compare(0, 5, "loom_") == 0 || is_operand_variable(c)) {
            c = "p_" + c;
        }
        std::string unique = c;
        for (int n = 1; used.count(unique); n++) unique = c + "_" + std::to_string(n);
        used.insert(unique);
        return unique;
    }

  private:
    std::set<std::string> used;
};

/** The C expression of output `out` of layout `l` at the inputs given (by
 * input name) as C expressions, inputs not given being 0: the XOR of the
 * bases of the inputs' set bits. With a constant input (a register index
 * in an unrolled loop) every term of it folds. */
std::string layout_expr(const LinearLayout &l, size_t out,
                        const std::map<std::string, std::string> &inputs) {
    std::string s;
    for (const LinearLayout::InDim &d : l.ins()) {
        auto it = inputs.find(d.name);
        if (it == inputs.end()) continue;
        for (size_t b = 0; b < d.bases.size(); b++) {
            const int base = d.bases[b][out];
            if (!base) continue;
            s += (s.empty() ? "" : " ^ ") +
                 ("((" + it->second + ") >> " + str(b) + " & 1) * " + str(base));
        }
    }
    return s.empty() ? "0" : "(" + s + ")";
}

/** The bits of output `out` that the given bits of inputs can set (by
 * input name: a mask of its bits). */
int reachable_bits(const LinearLayout &l, size_t out,
                   const std::map<std::string, int> &input_bits) {
    int mask = 0;
    for (const LinearLayout::InDim &d : l.ins()) {
        auto it = input_bits.find(d.name);
        if (it == input_bits.end()) continue;
        for (size_t b = 0; b < d.bases.size(); b++) {
            if ((it->second >> b) & 1) mask |= d.bases[b][out];
        }
    }
    return mask;
}

/** runtime ^ constant, where runtime only has bits of `mask`: the bits of
 * the constant outside the mask are added, so that an address's constant
 * part folds into the instruction's immediate offset. */
std::string xor_then_add(const std::string &runtime, const std::string &constant, int mask) {
    if (constant == "0") return runtime;
    if (mask == 0) return "(" + runtime + " + " + constant + ")";
    return "((" + runtime + " ^ (" + constant + " & " + str(mask) + ")) + (" + constant + " & ~" +
           str(mask) + "))";
}

/** Which tile axis the 16-byte chunks of a shared layout run along: offset
 * bits 0 .. chunk_bits - 1 are that axis's bits 0 .. chunk_bits - 1, and no
 * other offset bit touches them (each chunk is whole and aligned). -1 if
 * none does. */
int chunk_axis(const LinearLayout &shared, int chunk_bits) {
    if (shared.ins().size() != 1 || shared.ins()[0].name != "offset") return -1;
    const std::vector<std::vector<int>> &bases = shared.ins()[0].bases;
    if (int(bases.size()) < chunk_bits) return -1;
    for (size_t axis = 0; axis < shared.outs().size(); axis++) {
        bool ok = true;
        for (int b = 0; b < int(bases.size()) && ok; b++) {
            for (size_t o = 0; o < shared.outs().size() && ok; o++) {
                const int low = bases[b][o] & ((1 << chunk_bits) - 1);
                if (b < chunk_bits) {
                    ok = bases[b][o] == (o == axis ? 1 << b : 0);
                } else if (o == axis) {
                    ok = low == 0;
                }
            }
        }
        if (ok) return int(axis);
    }
    return -1;
}

bool power_of_two(int n) { return n > 0 && (n & (n - 1)) == 0; }

/** Whether a rows x cols tile is whole fragments of frag_rows x frag_cols
 * for warps_m x warps_n warps, as the mma block layouts need. */
bool whole_fragments(int rows, int cols, int frag_rows, int frag_cols, int warps_m, int warps_n) {
    return power_of_two(rows) && power_of_two(cols) && rows % (frag_rows * warps_m) == 0 &&
           cols % (frag_cols * warps_n) == 0;
}

/** The warps (warps_m, warps_n) of an mma block layout: the factoring of
 * num_warps for which `matches` holds; (0, 0) if none. */
template <typename F> std::pair<int, int> mma_warps(int num_warps, F matches) {
    for (int wm = 1; wm <= num_warps; wm *= 2) {
        if (num_warps % wm == 0 && matches(wm, num_warps / wm)) return {wm, num_warps / wm};
    }
    return {0, 0};
}

class Emitter {
  public:
    Emitter(const TileProgram &p, const std::vector<TileBuffer> &buffers)
        : program(p), buffers(buffers) {}

    TileKernelSource kernel() {
        internal_assert(program.grid.size() <= 3)
            << "tile codegen: " << program.name << " has a grid of more than 3 dimensions";
        internal_assert(program.num_warps >= 1 && program.num_warps <= 32)
            << "tile codegen: " << program.name << " has " << program.num_warps << " warps";
        TileKernelSource k;
        k.threads = 32 * program.num_warps;
        // What the program reads: its values and its scalars.
        FreeVariables free;
        std::set<std::string> bound(program.grid.begin(), program.grid.end());
        collect(program.body, &free, &bound);
        for (const TileBuffer &b : buffers) {
            internal_assert(b.dims >= 1)
                << "tile codegen: buffer " << b.name << " of no dimensions";
            TileKernelParam param{b.name, names.add(b.name), b.elem, true, b.written};
            buffer_c[b.name] = param.c_name;
            k.params.push_back(param);
        }
        for (const TileBuffer &b : buffers) {
            for (int d = 0; d + 1 < b.dims; d++) {
                const std::string name = b.name + ".stride." + std::to_string(d);
                TileKernelParam param{name, names.add(name), Int(32)};
                variable_c[name] = param.c_name;
                k.params.push_back(param);
                auto it = free.types.find(name);
                internal_assert(it == free.types.end() || it->second == Int(32))
                    << "tile codegen: " << name << " is read as " << type_to_string(it->second);
            }
        }
        for (const auto &[name, type] : free.types) {
            if (bound.count(name) || variable_c.count(name) || is_operand_variable(name)) continue;
            TileKernelParam param{name, names.add(name), type};
            variable_c[name] = param.c_name;
            k.params.push_back(param);
        }
        for (const std::string &g : program.grid) variable_c[g] = names.add(g);
        for (const auto &[name, t] : value_types) {
            value_c[name] = names.add((t.space == MemorySpace::Shared ? "s_" : "v_") + name);
        }
        std::map<std::string, int> uses, defs;
        count(program.body, &uses, &defs);
        find_loop_vars(program.body);
        find_fused(program.body, uses, defs);
        find_broadcasts(program.body);

        std::ostringstream head;
        head << "extern \"C\" __global__ void __launch_bounds__(" << k.threads << ") "
             << c_identifier(program.name) << "(";
        for (size_t i = 0; i < k.params.size(); i++) {
            const TileKernelParam &p = k.params[i];
            head << (i ? ",\n    " : "");
            if (p.is_buffer) {
                head << (p.written ? "" : "const ") << c_type(p.type) << " *__restrict__ "
                     << p.c_name;
            } else {
                head << "const " << c_type(p.type) << " " << p.c_name;
            }
        }
        head << ") {\n";
        head << "    extern __shared__ __align__(16) unsigned char loom_shared_memory[];\n";
        head << "    const int loom_tid = threadIdx.x, loom_lane = loom_tid % 32, loom_warp = "
                "loom_tid / 32;\n";
        const char *axes[] = {"x", "y", "z"};
        for (size_t i = 0; i < program.grid.size(); i++) {
            head << "    const int " << variable_c.at(program.grid[i]) << " = blockIdx." << axes[i]
                 << ";\n";
        }
        // Every value's storage up front: a loop's values live after it.
        for (const auto &[name, t] : value_types) {
            if (fused.count(name) || broadcasts.count(name)) continue;
            const std::string c = value_c.at(name);
            if (t.space == MemorySpace::Shared) {
                head << "    " << c_type(t.elem) << " *const " << c << " = reinterpret_cast<"
                     << c_type(t.elem) << " *>(loom_shared_memory + " << k.shared_bytes << ");\n";
                const int64_t bytes = int64_t(t.slots) * t.elements() * t.elem.bytes();
                k.shared_bytes += (bytes + 127) / 128 * 128;  // the swizzle's lines aligned
            } else {
                head << "    " << (packed(t.elem) ? "unsigned" : c_type(t.elem)) << " " << c << "["
                     << storage_count(t) << "];\n";
            }
        }
        // Reductions across warps and conversions through shared memory
        // share one scratch area after the values (each ends at a barrier).
        const int64_t scratch_at = k.shared_bytes;
        stmts(program.body, 1);
        if (scratch_bytes > 0) {
            head << "    unsigned char *const loom_scratch = loom_shared_memory + " << scratch_at
                 << ";\n";
            k.shared_bytes += (scratch_bytes + 127) / 128 * 128;
        }
        k.source = head.str() + hoisted.str() + body.str() + "}\n";
        return k;
    }

  private:
    const TileProgram &program;
    const std::vector<TileBuffer> &buffers;
    std::ostringstream body, hoisted;
    std::map<std::string, std::string> thread_values, block_values;
    /** The variables of the program's loops. */
    std::set<std::string> loop_vars;
    CNames names;
    std::map<std::string, std::string> buffer_c, variable_c, value_c;
    std::map<std::string, TileType> value_types;
    /** Register values computed element by element where they are used
     * (find_fused), by their defining op. */
    std::map<std::string, const TileOp *> fused;
    /** Broadcasts, by their result: views of their operand, read in place. */
    std::map<std::string, const TileOp *> broadcasts;
    int64_t scratch_bytes = 0;
    int loops = 0, temporaries = 0, slots = 0;
    /** The copies of the loop version being printed known to be 16-byte
     * aligned and wholly within their bounds (decided before it). */
    std::set<const TileOp *> fast_copy;
    /** The slots that are rotating counters of the loops being printed. */
    std::vector<std::pair<Expr, std::string>> rotating;

    /** Loads and maps whose one use is a map or store later in the same
     * list, with only loads and maps between that redefine none of their
     * operands: fused into that use, so that an epilogue's operands (a
     * bias, a residual) and results never occupy a tile of registers. */
    void find_fused(const std::vector<TileStmt> &program, const std::map<std::string, int> &uses,
                    const std::map<std::string, int> &defs) {
        for_each_list(program, [&](const std::vector<TileStmt> &ss) {
            for (size_t i = 0; i < ss.size(); i++) {
                if (ss[i].loop) continue;
                const TileOp &o = *ss[i].op;
                if ((o.kind != TileOpKind::Load && o.kind != TileOpKind::Map) ||
                    o.type.space != MemorySpace::Registers || uses.count(o.result) == 0 ||
                    uses.at(o.result) != 1 || defs.at(o.result) != 1) {
                    continue;
                }
                for (size_t j = i + 1; j < ss.size() && !ss[j].loop; j++) {
                    const TileOp &next = *ss[j].op;
                    const bool uses_it = std::find(next.operands.begin(), next.operands.end(),
                                                   o.result) != next.operands.end();
                    if (uses_it) {
                        if (next.kind == TileOpKind::Map || next.kind == TileOpKind::Store) {
                            fused[o.result] = &o;
                        }
                        break;
                    }
                    const bool redefines = std::find(o.operands.begin(), o.operands.end(),
                                                     next.result) != o.operands.end();
                    if ((next.kind != TileOpKind::Load && next.kind != TileOpKind::Map) ||
                        redefines) {
                        break;
                    }
                }
            }
        });
    }

    void find_loop_vars(const std::vector<TileStmt> &ss) {
        for (const TileStmt &s : ss) {
            if (!s.loop) continue;
            loop_vars.insert(s.loop->var);
            find_loop_vars(s.loop->body);
        }
    }

    void find_broadcasts(const std::vector<TileStmt> &ss) {
        for_each_op(ss, [&](const TileOp &o) {
            if (o.kind == TileOpKind::Broadcast) broadcasts[o.result] = &o;
        });
    }

    void count(const std::vector<TileStmt> &ss, std::map<std::string, int> *uses,
               std::map<std::string, int> *defs) {
        for_each_op(ss, [&](const TileOp &o) {
            for (const std::string &operand : o.operands) (*uses)[operand]++;
            if (!o.result.empty()) (*defs)[o.result]++;
        });
    }

    void collect(const std::vector<TileStmt> &ss, FreeVariables *free,
                 std::set<std::string> *bound) {
        for (const TileStmt &s : ss) {
            if (s.loop) {
                bound->insert(s.loop->var);
                s.loop->min.accept(free);
                s.loop->extent.accept(free);
                collect(s.loop->body, free, bound);
                continue;
            }
            const TileOp &o = *s.op;
            for (const Expr &e : o.origin) e.accept(free);
            for (const Expr &e : o.bounds) e.accept(free);
            if (o.slot.defined()) o.slot.accept(free);
            if (o.fn.defined()) o.fn.accept(free);
            if (o.result.empty()) continue;
            const std::string what = "tile codegen: " + o.result;
            auto it = value_types.find(o.result);
            if (it == value_types.end()) {
                internal_assert(o.type.layout) << what << " has no layout";
                value_types[o.result] = o.type;
            } else {
                const TileType &t = it->second;
                internal_assert(t.elem == o.type.elem && t.space == o.type.space &&
                                t.slots == o.type.slots && o.type.layout &&
                                *t.layout == *o.type.layout)
                    << what << " is redefined with another type or layout";
            }
        }
    }

    std::string c_var(const std::string &name) {
        auto it = variable_c.find(name);
        internal_assert(it != variable_c.end()) << "tile codegen: no variable " << name;
        return it->second;
    }

    /** The C of a scalar Expr: indices (Loom's integer division and
     * modulo, through the prelude) and maps' arithmetic. */
    std::string c_expr(const Expr &e) {
        // Integer divisions the whole block shares, computed once.
        struct Hoist : IRMutator {
            Emitter *em;
            using IRMutator::visit;
            Expr hoisted(const Expr &r) {
                const std::string name = em->block_invariant(r);
                return name.empty() ? r : Variable::make(r.type(), "loom.hoisted." + name);
            }
            Expr visit(const Div *op) override { return hoisted(IRMutator::visit(op)); }
            Expr visit(const Mod *op) override { return hoisted(IRMutator::visit(op)); }
        } hoist;
        hoist.em = this;
        return print(hoist.mutate(e));
    }

    /** CodeGen_GPU_C's C, as the loop kernels print it; a map's operand
     * variables (_0, _1, ...) and its element's coordinates (_i0, _i1)
     * are its own, and values computed at the kernel's start keep their
     * names. */
    std::string print(const Expr &e) {
        return gpu_c_expr(
            e, GpuDialect::CUDA,
            [&](const std::string &name) {
                int axis;
                if (is_tile_coordinate(name, &axis)) return "loom_t" + str(axis);
                if (is_operand_variable(name)) return name;
                if (name.compare(0, 13, "loom.hoisted.") == 0) return name.substr(13);
                return c_var(name);
            },
            program.name);
    }

    const TileBuffer &buffer(const std::string &name) {
        for (const TileBuffer &b : buffers) {
            if (b.name == name) return b;
        }
        internal_error << "tile codegen: no buffer " << name;
        return buffers[0];
    }

    const TileType &value(const std::string &name) { return value_types.at(name); }

    static int64_t register_count(const TileType &t) { return t.layout->in_size("register"); }
    static int64_t storage_count(const TileType &t) {
        const int64_t n = register_count(t);
        return packed(t.elem) ? (n + 1) / 2 : n;
    }

    /** Element `i` (a C expression) of a register value, and the statement
     * that sets it to x. */
    std::string read(const std::string &name, const std::string &i) {
        const TileType &t = value(name);
        if (!packed(t.elem)) return value_c.at(name) + "[" + i + "]";
        return "loom_tile_get<" + c_type(t.elem) + ">(" + value_c.at(name) + "[(" + i +
               ") >> 1], (" + i + ") & 1)";
    }
    std::string write(const std::string &name, const std::string &i, const std::string &x) {
        const TileType &t = value(name);
        const std::string &c = value_c.at(name);
        if (!packed(t.elem)) return c + "[" + i + "] = " + x + ";";
        const std::string word = c + "[(" + i + ") >> 1]";
        return word + " = loom_tile_set(" + word + ", (" + i + ") & 1, " + x + ");";
    }

    void stmts(const std::vector<TileStmt> &ss, int depth) {
        const std::string pad(4 * depth, ' ');
        for (const TileStmt &s : ss) {
            if (s.loop) {
                loop(*s.loop, depth);
            } else {
                op(*s.op, pad);
            }
        }
    }

    /** A name for a C expression of the thread's indices alone (loom_tid,
     * loom_lane, loom_warp and constants), computed once at the kernel's
     * start rather than in the loops that use it. */
    std::string thread_value(const std::string &e) {
        auto it = thread_values.find(e);
        if (it != thread_values.end()) return it->second;
        const std::string name = "loom_h" + str(thread_values.size());
        hoisted << "    const int " << name << " = " << e << ";\n";
        thread_values[e] = name;
        return name;
    }

    /** An integer division's C where e is the same for the whole block
     * (of the grid's coordinates and the scalars alone, as a batch's and a
     * head's index are): computed once, at the kernel's start, rather than
     * in every address of every loop. */
    std::string block_invariant(const Expr &e) {
        if (!e.type().is_int_or_uint()) return "";
        bool invariant = true;
        struct Vars : IRVisitor {
            const std::set<std::string> *loops;
            bool *invariant;
            using IRVisitor::visit;
            void visit(const Variable *op) override {
                if (loops->count(op->name) || is_operand_variable(op->name) ||
                    is_tile_coordinate(op->name)) {
                    *invariant = false;
                }
            }
        } vars;
        vars.loops = &loop_vars;
        vars.invariant = &invariant;
        e.accept(&vars);
        if (!invariant) return "";
        const std::string c = print(e);
        auto it = block_values.find(c);
        if (it != block_values.end()) return it->second;
        const std::string name = "loom_b" + str(block_values.size());
        hoisted << "    const " << c_type(e.type()) << " " << name << " = " << c << ";\n";
        block_values[c] = name;
        return name;
    }

    /** Whether e is `var` plus something that does not depend on it. */
    static bool var_plus_invariant(const Expr &e, const std::string &var) {
        const Expr rest = substitute(var, make_zero(Int(32)), e);
        return e.type() == Int(32) && !expr_uses_var(rest, var) &&
               equal(simplify(e - rest), Variable::make(Int(32), var));
    }

    /** Whether e is c * var plus something that does not depend on var,
     * with c a multiple of `m`. */
    static bool steps_by_multiple(const Expr &e, const std::string &var, int64_t m) {
        if (!expr_uses_var(e, var)) return true;
        const Expr rest = substitute(var, make_zero(Int(32)), e);
        const Expr c = simplify(substitute(var, make_one(Int(32)), e) - rest);
        const int64_t *k = as_const_int(c);
        return e.type() == Int(32) && k && *k % m == 0 &&
               can_prove(simplify(e - rest) == Variable::make(Int(32), var) * c);
    }

    /** Whether async_copy `o` goes by cp.async chunks (its layout's
     * 16-byte chunks run along the buffer's dense dimension). */
    bool chunked(const TileOp &o) {
        if (o.kind != TileOpKind::AsyncCopy || o.type.elem.bits != 16 || o.type.shape.size() != 2 ||
            !o.type.layout) {
            return false;
        }
        const int fast = chunk_axis(*o.type.layout, 3);
        const std::vector<int> axes = access_axes(o, 2);
        return fast >= 0 && !axes.empty() && axes.back() == fast;
    }

    /** A loop. Its copies by 16-byte chunks whose alignment is the same
     * at every step (the origin along the dense dimension advancing by
     * multiples of the chunk) are decided once, before it, with the last
     * step at which every such copy's tile is wholly within its bounds: the
     * loop is versioned, its fast version (when aligned) running up to
     * there by unmasked chunks, with no fallbacks; the general one runs the
     * rest (the ragged edges, the steps past the end), each copy choosing
     * its path. The slots of its ops, (var + c) % S, are counters that
     * rotate with the loop rather than a modulo each step. */
    void loop(const TileLoop &l, int depth) {
        const std::string pad(4 * depth, ' '), in = pad + "    ";
        const std::string var = names.add(l.var), end = "loom_end" + str(loops++);
        std::vector<const TileOp *> versioned;
        std::string cond;
        for (const TileStmt &s : l.body) {
            if (!s.op || !chunked(*s.op) || s.op->origin.empty() ||
                !steps_by_multiple(s.op->origin.back(), l.var, 8)) {
                continue;
            }
            TileOp at_min = *s.op;
            at_min.origin.back() = substitute(l.var, l.min, at_min.origin.back());
            cond += (cond.empty() ? "" : " && ") + ("(" + aligned(at_min, 8) + ")");
            versioned.push_back(s.op.get());
        }
        // The loop's counters: its variable, its end and its rotating slots.
        const size_t outer_slots = rotating.size();
        std::string init = var + " = " + c_expr(l.min) + ", " + end + " = " + var + " + " +
                           c_expr(l.extent),
                    advance = var + "++";
        for (const TileStmt &s : l.body) {
            if (!s.op || !s.op->slot.defined()) continue;
            const Mod *m = s.op->slot.as<Mod>();
            const int64_t *n = m ? as_const_int(m->b) : nullptr;
            if (!n || *n < 1 || *n > (1 << 20) || !var_plus_invariant(m->a, l.var)) continue;
            if (std::any_of(rotating.begin() + outer_slots, rotating.end(),
                            [&](const auto &r) { return equal(r.first, s.op->slot); })) {
                continue;
            }
            const std::string c = "loom_slot" + str(slots++);
            // Its value at the first step, then + 1 modulo n each step.
            init += ", " + c + " = " + c_expr(substitute(l.var, l.min, s.op->slot));
            advance += ", " + c + " = " + c + " == " + str(*n - 1) + " ? 0 : " + c + " + 1";
            rotating.emplace_back(s.op->slot, c);
        }
        variable_c[l.var] = var;
        // A loop of a few steps (a mask's edge) is not worth a second copy
        // of its body: NVRTC's time goes with the source's size.
        if (versioned.empty() || l.few_steps) {
            body << pad << "for (int " << init << "; " << var << " < " << end << "; " << advance
                 << ") {\n";
            stmts(l.body, depth + 1);
            body << pad << "}\n";
        } else {
            // The fast steps are those where every versioned copy's tile
            // is within its bounds: origin + extent <= bound along each
            // dimension. A condition the loop does not change is decided
            // before it; one growing with the loop's variable (c var + r <=
            // 0, c > 0) is a last step, floor(-r / c); any other is tested
            // each step.
            std::string invariant, each_step, stop = end;
            for (const TileOp *o : versioned) {
                const std::vector<int> axes = access_axes(*o, 2);
                for (size_t d = 0; d < axes.size(); d++) {
                    const int64_t extent = axes[d] >= 0 ? o->type.shape[axes[d]] : 1;
                    const Expr f = simplify(o->origin[d] + int(extent) - o->bounds[d]);
                    const Expr r = simplify(substitute(l.var, make_zero(Int(32)), f));
                    const Expr c = simplify(substitute(l.var, make_one(Int(32)), f) - r);
                    const int64_t *k = as_const_int(c);
                    const bool linear =
                        f.type() == Int(32) && k &&
                        can_prove(simplify(f - r) == Variable::make(Int(32), l.var) * c);
                    if (!expr_uses_var(f, l.var)) {
                        invariant +=
                            (invariant.empty() ? "" : " && ") + ("(" + c_expr(f) + " <= 0)");
                    } else if (linear && *k > 0) {
                        stop = "loom_min(" + stop + ", " + c_expr(simplify(Div::make(-r, c) + 1)) +
                               ")";
                    } else {
                        each_step += " && (" + c_expr(f) + " <= 0)";
                    }
                }
            }
            // Two copies of the body: the fast one, its versioned copies
            // by unmasked 16-byte chunks, while they are aligned and within
            // their bounds; then the general one for the steps after it
            // (the ragged edges, the steps past the end), or for all of
            // them when a copy is not aligned, each copy choosing its path.
            // (NVRTC's time goes with the source's size: a third copy, the
            // aligned but masked steps, cost it a third more for a step or
            // two per block.)
            const std::string last = "loom_stop" + str(loops - 1);
            const std::string in2 = in + "    ";
            body << pad << "{\n"
                 << in << "int " << init << ";\n"
                 << in << "if (" << cond << ") {\n"
                 << in2 << "const int " << last << " = "
                 << (invariant.empty() ? stop : invariant + " ? " + stop + " : " + var) << ";\n"
                 << in2 << "for (; " << var << " < " << last << each_step << "; " << advance
                 << ") {\n";
            for (const TileOp *o : versioned) fast_copy.insert(o);
            stmts(l.body, depth + 3);
            for (const TileOp *o : versioned) fast_copy.erase(o);
            body << in2 << "}\n"
                 << in << "}\n"
                 << in << "for (; " << var << " < " << end << "; " << advance << ") {\n";
            stmts(l.body, depth + 2);
            body << in << "}\n" << pad << "}\n";
        }
        rotating.resize(outer_slots);
    }

    /** The C of an op's slot: a rotating counter of its loop, or the
     * Expr. */
    std::string slot_c(const Expr &slot) {
        for (const auto &[e, c] : rotating) {
            if (equal(e, slot)) return c;
        }
        return c_expr(slot);
    }

    void op(const TileOp &o, const std::string &pad) {
        if (fused.count(o.result)) return;  // computed where it is used
        switch (o.kind) {
        case TileOpKind::Zeros: {
            body << pad << "#pragma unroll\n"
                 << pad << "for (int loom_i = 0; loom_i < " << storage_count(o.type)
                 << "; loom_i++) " << value_c.at(o.result) << "[loom_i] = 0;\n";
            break;
        }
        case TileOpKind::Load: load(o, pad); break;
        case TileOpKind::Store: store(o, pad); break;
        case TileOpKind::Map: map(o, pad); break;
        case TileOpKind::AsyncCopy: async_copy(o, pad); break;
        case TileOpKind::AsyncCommit: body << pad << "loom_cp_async_commit();\n"; break;
        case TileOpKind::AsyncWait:
            body << pad << "loom_cp_async_wait<" << o.pending << ">();\n";
            break;
        case TileOpKind::Barrier: body << pad << "__syncthreads();\n"; break;
        case TileOpKind::ConvertLayout:
            if (value(o.operands[0]).space == MemorySpace::Shared) {
                convert_layout(o, pad);
            } else {
                convert_registers(o, pad);
            }
            break;
        case TileOpKind::Reduce: reduce(o, pad); break;
        case TileOpKind::Broadcast: {
            const TileType &in = register_operand(o, 0);
            internal_assert(*in.layout == slice_layout(*o.type.layout, o.axis))
                << "tile codegen: broadcast " << o.result << " reads " << o.operands[0]
                << " in a layout other than its own sliced along axis " << o.axis
                << " (a conversion is missing)";
            break;  // read in place by its users
        }
        case TileOpKind::Dot: dot(o, pad); break;
        default:
            internal_error << "tile codegen: " << (o.result.empty() ? "an op" : o.result)
                           << " is an op the CUDA translation lacks";
        }
    }

    /** Opens a loop over a register value's registers (loom_i), with each
     * element's tile coordinates in loom_t0, loom_t1, ...: the lane's and
     * warp's part computed once, the register's folded. */
    void open_register_loop(const LinearLayout &l, const std::string &pad) {
        const size_t rank = l.outs().size();
        body << pad << "{\n";
        for (size_t a = 0; a < rank; a++) {
            body << pad << "    const int loom_r" << a << " = "
                 << layout_expr(l, a, {{"lane", "loom_lane"}, {"warp", "loom_warp"}}) << ";\n";
        }
        body << pad << "    #pragma unroll\n"
             << pad << "    for (int loom_i = 0; loom_i < " << l.in_size("register")
             << "; loom_i++) {\n";
        for (size_t a = 0; a < rank; a++) {
            const int mask = reachable_bits(l, a, {{"lane", -1}, {"warp", -1}});
            body << pad << "        const int loom_k" << a << " = "
                 << layout_expr(l, a, {{"register", "loom_i"}}) << ";\n"
                 << pad << "        const int loom_t" << a << " = "
                 << xor_then_add("loom_r" + str(a), "loom_k" + str(a), mask) << ";\n";
        }
    }
    void close_register_loop(const std::string &pad) { body << pad << "    }\n" << pad << "}\n"; }

    /** The global side of an access from inside a loop whose tile
     * coordinates are loom_t<axis>: sets `inside` (all coordinates within
     * the bounds) and `offset` (elements from the buffer's start). */
    void global_access(const TileOp &o, size_t rank, const std::string &pad) {
        const TileBuffer &b = buffer(o.buffer);
        const std::vector<int> axes = access_axes(o, rank);
        internal_assert(int(axes.size()) == b.dims)
            << "tile codegen: an access of " << axes.size() << " dimensions to " << b.name
            << ", which has " << b.dims;
        std::string inside, offset;
        for (size_t d = 0; d < axes.size(); d++) {
            const std::string g = "loom_g" + str(d);
            body << pad << "const int " << g << " = " << c_expr(o.origin[d])
                 << (axes[d] >= 0 ? " + loom_t" + str(axes[d]) : "") << ";\n";
            inside += (d ? " && " : "") + g + " < " + c_expr(o.bounds[d]);
            offset += (d ? " + " : "") + g +
                      (int(d) + 1 < b.dims ? " * " + c_var(b.name + ".stride." + str(d)) : "");
        }
        body << pad << "const bool loom_inside = " << inside << ";\n"
             << pad << "const int loom_offset = " << offset << ";\n";
    }

    const TileType &register_operand(const TileOp &o, size_t i) {
        const TileType &t = value(o.operands[i]);
        internal_assert(t.space == MemorySpace::Registers)
            << "tile codegen: " << (o.result.empty() ? "a store" : o.result) << " reads "
            << o.operands[i] << " from shared memory";
        return t;
    }

    /** Element loom_i of a load, at tile coordinates loom_t*, masked. */
    std::string loaded_element(const TileOp &o, const std::string &pad) {
        const TileBuffer &b = buffer(o.buffer);
        internal_assert(o.type.space == MemorySpace::Registers)
            << "tile codegen: load " << o.result << " into shared memory";
        global_access(o, o.type.shape.size(), pad);
        const std::string zero = packed(b.elem) ? "loom_tile_get<" + c_type(b.elem) + ">(0u, 0)"
                                                : "(" + c_type(b.elem) + ")0";
        return convert("(loom_inside ? " + buffer_c.at(b.name) + "[loom_offset] : " + zero + ")",
                       b.elem, o.type.elem);
    }

    /** The C of element loom_i of a register value (at coordinates loom_t*
     * of its layout); a value fused into its one use is computed here, by
     * statements in a block of its own. */
    std::string element(const std::string &name, const std::string &pad,
                        const std::string &reg = "loom_i") {
        auto broadcast = broadcasts.find(name);
        if (broadcast != broadcasts.end()) {
            // Register r of the broadcast is register r of its operand with
            // the bits that step along the broadcast axis taken out.
            const TileOp &o = *broadcast->second;
            const std::vector<int> kept = sliced_register_bits(*o.type.layout, o.axis);
            std::string r;
            for (size_t b = 0; b < kept.size(); b++) {
                r +=
                    (b ? " | " : "") + ("((" + reg + ") >> " + str(kept[b]) + " & 1) << " + str(b));
            }
            return element(o.operands[0], pad, r.empty() ? "0" : "(" + r + ")");
        }
        auto fused_op = fused.find(name);
        if (fused_op == fused.end()) return read(name, reg);
        internal_assert(reg == "loom_i")
            << "tile codegen: " << name << " is read away from its registers";
        const TileOp &o = *fused_op->second;
        const std::string e = "loom_e" + str(temporaries++), in = pad + "    ";
        body << pad << c_type(o.type.elem) << " " << e << ";\n" << pad << "{\n";
        const std::string x =
            o.kind == TileOpKind::Load ? loaded_element(o, in) : mapped_element(o, in);
        body << in << e << " = " << x << ";\n" << pad << "}\n";
        return e;
    }

    void load(const TileOp &o, const std::string &pad) {
        const std::string in = pad + "        ";
        if (packed(o.type.elem)) zero_words(o.result, pad);
        open_register_loop(*o.type.layout, pad);
        body << in << write(o.result, "loom_i", loaded_element(o, in)) << "\n";
        close_register_loop(pad);
    }

    void store(const TileOp &o, const std::string &pad) {
        const TileType &v = register_operand(o, 0);
        const TileBuffer &b = buffer(o.buffer);
        internal_assert(b.written)
            << "tile codegen: a store to " << b.name << ", which is not a written buffer";
        const std::string in = pad + "        ";
        open_register_loop(*v.layout, pad);
        const std::string x = element(o.operands[0], in);
        global_access(o, v.shape.size(), in);
        body << in << "if (loom_inside) " << buffer_c.at(b.name)
             << "[loom_offset] = " << convert(x, v.elem, b.elem) << ";\n";
        close_register_loop(pad);
    }

    /** Halves are set one at a time: their words start defined. */
    void zero_words(const std::string &name, const std::string &pad) {
        body << pad << "#pragma unroll\n"
             << pad << "for (int loom_i = 0; loom_i < " << storage_count(value(name))
             << "; loom_i++) " << value_c.at(name) << "[loom_i] = 0;\n";
    }

    void map(const TileOp &o, const std::string &pad) {
        const bool in_place =
            std::find(o.operands.begin(), o.operands.end(), o.result) != o.operands.end();
        if (packed(o.type.elem) && !in_place) zero_words(o.result, pad);
        const std::string in = pad + "        ";
        open_register_loop(*o.type.layout, pad);
        body << in << write(o.result, "loom_i", mapped_element(o, in)) << "\n";
        close_register_loop(pad);
    }

    /** Element loom_i of a map: its operands' elements as _0, _1, ... */
    std::string mapped_element(const TileOp &o, const std::string &pad) {
        for (size_t k = 0; k < o.operands.size(); k++) {
            const TileType &t = register_operand(o, k);
            internal_assert(*t.layout == *o.type.layout)
                << "tile codegen: map " << o.result << " reads " << o.operands[k]
                << " in another layout than its result's (a conversion is missing)";
        }
        std::vector<std::string> xs;
        for (const std::string &operand : o.operands) xs.push_back(element(operand, pad));
        for (size_t k = 0; k < o.operands.size(); k++) {
            body << pad << "const " << c_type(value(o.operands[k]).elem) << " _" << k << " = "
                 << xs[k] << ";\n";
        }
        return c_expr(o.fn);
    }

    void async_copy(const TileOp &o, const std::string &pad) {
        const TileType &t = o.type;
        const TileBuffer &b = buffer(o.buffer);
        const std::string what = "tile codegen: async_copy " + o.result;
        internal_assert(t.elem.bits == 16 && t.shape.size() == 2 && b.elem == t.elem)
            << what << " copies 2-D tiles of 16-bit elements of its buffer's type";
        const LinearLayout &l = *t.layout;
        internal_assert(l.ins().size() == 1 && l.ins()[0].name == "offset" && l.is_bijective())
            << what << " writes a layout of shared offsets, each element once";
        const std::vector<int> axes = access_axes(o, 2);
        internal_assert(int(axes.size()) == b.dims)
            << what << ": an access of " << axes.size() << " dimensions to " << b.name
            << ", which has " << b.dims;
        const std::string dst =
            value_c.at(o.result) + " + " +
            (o.slot.defined() ? "(" + slot_c(o.slot) + ") * " + str(t.elements()) : "0");
        const std::string in = pad + "    ";
        body << pad << "{\n" << in << c_type(t.elem) << " *const loom_dst = " << dst << ";\n";
        const int fast = chunk_axis(l, 3);
        if (fast >= 0 && axes.back() == fast) {
            // The layout's 16-byte chunks run along the buffer's dense
            // dimension: by cp.async of whole chunks when their global
            // addresses are 16-byte aligned, else of 4-byte pairs when
            // those are aligned, else element by element. The conditions
            // are the block's (buffer, strides, origin), so its threads
            // take one path, and each issues its commits either way:
            // plain stores land at once, an empty group completes at once,
            // and the barrier after the wait shows both to the block.
            internal_assert(chunk_axis(l, 1) == fast) << what << ": pairs split across axes";
            if (fast_copy.count(&o)) {
                // In the loop's fast version: aligned and wholly within its
                // bounds, by unmasked chunks.
                chunk_copy(o, 8, in, "", true);
                body << pad << "}\n";
                return;
            }
            body << in << "if (" << aligned(o, 8) << ") {\n";
            chunk_copy(o, 8, in + "    ", "");
            body << in << "} else if (" << aligned(o, 2) << ") {\n";
            chunk_copy(o, 2, in + "    ", " 1");
            body << in << "} else {\n";
            element_copy(o, in + "    ", " 1");
            body << in << "}\n";
        } else {
            // The buffer's dense dimension runs across the layout's chunks
            // (a transposed source): element by element.
            element_copy(o, in, " 4");
        }
        body << pad << "}\n";
    }

    /** The C condition that a copy's chunks of `elems` elements along the
     * buffer's dense dimension have global addresses aligned to their size:
     * the buffer's start, every other dimension's stride and the origin
     * along the dense one multiples of it. The same for the block's
     * threads (the program's Exprs do not depend on the thread). */
    std::string aligned(const TileOp &o, int elems) {
        const TileBuffer &b = buffer(o.buffer);
        const int bytes = elems * b.elem.bytes();
        std::string s = "(reinterpret_cast<unsigned long long>(" + buffer_c.at(b.name) + ") & " +
                        str(bytes - 1) + "u)";
        for (int d = 0; d + 1 < b.dims; d++) {
            s += " | (unsigned(" + c_var(b.name + ".stride." + str(d)) + ") & " + str(elems - 1) +
                 "u)";
        }
        s += " | (unsigned(" + c_expr(o.origin.back()) + ") & " + str(elems - 1) + "u)";
        return "(" + s + ") == 0";
    }

    /** The copy into loom_dst by cp.async chunks of `elems` elements (8:
     * 16 bytes; 2: 4 bytes), contiguous in the tile's layout and along the
     * buffer's dense dimension, the block's threads taking turns (chunk =
     * thread + step x threads), zero-filled past the bounds. The chunks'
     * global addresses must be aligned to their size (see aligned). */
    void chunk_copy(const TileOp &o, int elems, const std::string &pad, const std::string &unroll,
                    bool interior = false) {
        const TileType &t = o.type;
        const TileBuffer &b = buffer(o.buffer);
        const LinearLayout &l = *t.layout;
        const std::vector<int> axes = access_axes(o, 2);
        const int threads = 32 * program.num_warps, bytes = elems * 2;
        internal_assert(elems == 8 || elems == 2) << "tile codegen: chunks of 16 or 4 bytes";
        const int bits = elems == 8 ? 3 : 1;  // log2(elems)
        const int64_t chunks = t.elements() / elems, steps = (chunks + threads - 1) / threads;
        const bool whole = chunks % threads == 0, split = power_of_two(threads);
        const std::string in = pad + "    ", e = str(elems);
        // The thread's chunk in the slot, then the step's (a constant
        // offset, folded into the instruction).
        body << pad << c_type(t.elem) << " *const loom_dst_t = loom_dst + loom_tid * " << e
             << ";\n";
        const std::string dst = "loom_dst_t + loom_i * " + str(threads * elems);
        for (size_t a = 0; a < 2; a++) {
            body << pad << "const int loom_r" << a << " = "
                 << thread_value(layout_expr(l, a, {{"offset", split ? "loom_tid * " + e : "0"}}))
                 << ";\n";
        }
        body << pad << "#pragma unroll" << unroll << "\n"
             << pad << "for (int loom_i = 0; loom_i < " << steps << "; loom_i++) {\n"
             << in << "const int loom_chunk = loom_tid + loom_i * " << threads << ";\n";
        if (!whole) body << in << "if (loom_chunk < " << chunks << ") {\n";
        // A thread's bits and a step's are disjoint when the threads are a
        // power of two: the step's part folds.
        const std::string step = split ? "loom_i * " + str(threads * elems) : "loom_chunk * " + e;
        for (size_t a = 0; a < 2; a++) {
            const std::string k = "loom_k" + str(a), r = "loom_r" + str(a);
            body << in << "const int " << k << " = " << layout_expr(l, a, {{"offset", step}})
                 << ";\n"
                 << in << "const int loom_t" << a << " = "
                 << (split ? xor_then_add(r, k,
                                          reachable_bits(l, a, {{"offset", (threads - 1) << bits}}))
                           : r + " ^ " + k)
                 << ";\n";
        }
        std::string inside, offset;
        for (size_t d = 0; d < axes.size(); d++) {
            const std::string g = "loom_g" + str(d);
            body << in << "const int " << g << " = " << c_expr(o.origin[d])
                 << (axes[d] >= 0 ? " + loom_t" + str(axes[d]) : "") << ";\n";
            if (d + 1 < axes.size()) {
                inside += (inside.empty() ? "" : " && ") + g + " < " + c_expr(o.bounds[d]);
            }
            offset += (d ? " + " : "") + g +
                      (d + 1 < axes.size() ? " * " + c_var(b.name + ".stride." + str(d)) : "");
        }
        if (interior) {
            internal_assert(elems == 8) << "tile codegen: unmasked chunks of 16 bytes";
            body << in << "loom_cp_async_16_full(" << dst << ", " << buffer_c.at(b.name) << " + ("
                 << offset << "));\n";
            if (!whole) body << in << "}\n";
            body << pad << "}\n";
            return;
        }
        const std::string last = "loom_g" + str(axes.size() - 1);
        const std::string left =
            "loom_max(0, loom_min(" + e + ", " + c_expr(o.bounds.back()) + " - " + last + "))";
        body << in
             << "const int loom_left = " << (inside.empty() ? left : inside + " ? " + left + " : 0")
             << ";\n";
        body << in << "loom_cp_async_" << bytes << "(" << dst << ", loom_left ? "
             << buffer_c.at(b.name) << " + (" << offset << ") : " << buffer_c.at(b.name)
             << ", loom_left * 2);\n";
        if (!whole) body << in << "}\n";
        body << pad << "}\n";
    }

    /** The copy into loom_dst element by element, plain loads and shared
     * stores (landed at once), consecutive threads along the buffer's
     * rows, zeros past the bounds: any layout, any alignment. */
    void element_copy(const TileOp &o, const std::string &pad, const std::string &unroll) {
        const TileType &t = o.type;
        const TileBuffer &b = buffer(o.buffer);
        const std::vector<int> axes = access_axes(o, 2);
        const int threads = 32 * program.num_warps;
        const LinearLayout where = t.layout->invert();  // (row, col) -> offset
        const int dense = axes.back() >= 0 ? axes.back() : 1, other = 1 - dense;
        const int64_t n = t.elements(), steps = (n + threads - 1) / threads;
        const std::string in = pad + "    ";
        body << pad << "#pragma unroll" << unroll << "\n"
             << pad << "for (int loom_i = 0; loom_i < " << steps << "; loom_i++) {\n"
             << in << "const int loom_e = loom_tid + loom_i * " << threads << ";\n";
        if (n % threads) body << in << "if (loom_e < " << n << ") {\n";
        body << in << "const int loom_t" << dense << " = loom_e % " << t.shape[dense] << ", loom_t"
             << other << " = loom_e / " << t.shape[dense] << ";\n";
        global_access(o, 2, in);
        const std::string raw =
            "reinterpret_cast<const unsigned short *>(" + buffer_c.at(b.name) + ")[loom_offset]";
        body << in << "reinterpret_cast<unsigned short *>(loom_dst)["
             << layout_expr(where, 0, {{"row", "loom_t0"}, {"col", "loom_t1"}})
             << "] = loom_inside ? " << raw << " : (unsigned short)0;\n";
        if (n % threads) body << in << "}\n";
        body << pad << "}\n";
    }

    /** Shared memory to the A or B operand of mma.sync, by ldmatrix: each
     * lane gives the address of one 8-element row of one 8 x 8 matrix, the
     * matrices of one (A) or two (B, x4) fragments at a time. */
    void convert_layout(const TileOp &o, const std::string &pad) {
        const TileType &from = value(o.operands[0]);
        const std::string what = "tile codegen: convert_layout " + o.result;
        internal_assert(from.space == MemorySpace::Shared && o.type.space == MemorySpace::Registers)
            << what
            << " reads shared memory into registers (register-to-register conversions "
               "are not translated yet)";
        internal_assert(packed(o.type.elem)) << what << ": ldmatrix moves 16-bit elements";
        const int rows = o.type.shape[0], cols = o.type.shape[1], nw = program.num_warps;
        const LinearLayout &to = *o.type.layout;
        const auto a_warps = mma_warps(nw, [&](int m, int n) {
            return whole_fragments(rows, cols, 16, 16, m, 1) &&
                   to == mma_a_layout(rows, cols, m, n);
        });
        const auto b_warps = mma_warps(nw, [&](int m, int n) {
            return whole_fragments(rows, cols, 16, 8, 1, n) && to == mma_b_layout(rows, cols, m, n);
        });
        const bool is_a = a_warps.first > 0;
        internal_assert(is_a || b_warps.first > 0)
            << what << " converts to a layout other than mma_a_layout or mma_b_layout for " << nw
            << " warps";
        const auto [wm, wn] = is_a ? a_warps : b_warps;
        const int fast = chunk_axis(*from.layout, 3);
        internal_assert(fast >= 0 && from.layout->is_bijective())
            << what << ": ldmatrix reads 16-byte rows, which the layout of " << o.operands[0]
            << " does not keep whole";
        const LinearLayout where = from.layout->invert();  // (row, col) -> offset
        // The axis along which each lane holds pairs of a fragment (k for
        // both): ldmatrix's rows run along it, or .trans makes them.
        const int pairs_axis = is_a ? 1 : 0, slow = 1 - fast;
        const bool trans = fast != pairs_axis;
        // Fragments: A 16 x 16 (mi, ki); B 16 x 8 (ki, ni), two at a time
        // when there are two (x4).
        const int warp_rows = is_a ? rows / wm : rows, warp_cols = is_a ? cols : cols / wn;
        const int frag_rows = 16;
        const int count = is_a ? 4 : (warp_cols / 8 >= 2 ? 4 : 2);
        const int step_cols = is_a ? 16 : 8 * (count / 2);
        const std::string slot =
            o.slot.defined() ? "(" + slot_c(o.slot) + ") * " + str(from.elements()) : "0";
        // Lane l addresses row l % 8 of matrix j = l / 8 % count: A's
        // matrices (0, 0), (8, 0), (0, 8), (8, 8) (a0..a3); B's (0, 0), (8,
        // 0) (b0, b1), then (0, 8), (8, 8) for the next fragment.
        std::string lane_coord[2];
        const std::string j = "(loom_lane / 8 % " + str(count) + ")";
        lane_coord[0] = "(" + j + " % 2) * 8";
        lane_coord[1] = "(" + j + " / 2) * 8";
        lane_coord[slow] += " + loom_lane % 8";
        const std::string warp_coord =
            is_a ? "(loom_warp / " + str(wn) + " % " + str(wm) + ") * " + str(warp_rows)
                 : "(loom_warp % " + str(wn) + ") * " + str(warp_cols);
        (is_a ? lane_coord[0] : lane_coord[1]) += " + " + warp_coord;
        const std::string in = pad + "    ";
        const std::string row = "(" + lane_coord[0] + ")", col = "(" + lane_coord[1] + ")";
        body << pad << "{\n"
             << in
             << "const unsigned short *const loom_base = reinterpret_cast<const unsigned "
                "short *>("
             << value_c.at(o.operands[0]) << " + " << slot << ");\n"
             << in << "const int loom_off = "
             << thread_value(layout_expr(where, 0, {{"row", row}, {"col", col}})) << ";\n";
        const int frags_r = warp_rows / frag_rows, frags_c = warp_cols / step_cols;
        // The coordinate bits the lane and the warp set: a fragment's
        // offset bits beyond what they reach are added, not XORed.
        int runtime_bits[2] = {8, count == 4 ? 8 : 0};
        runtime_bits[slow] |= 7;
        if (is_a) runtime_bits[0] |= (rows - 1) & ~(warp_rows - 1);
        else runtime_bits[1] |= (cols - 1) & ~(warp_cols - 1);
        const int runtime_mask =
            reachable_bits(where, 0, {{"row", runtime_bits[0]}, {"col", runtime_bits[1]}});
        body << in << "#pragma unroll\n"
             << in << "for (int loom_fr = 0; loom_fr < " << frags_r << "; loom_fr++) {\n"
             << in << "    #pragma unroll\n"
             << in << "    for (int loom_fc = 0; loom_fc < " << frags_c << "; loom_fc++) {\n";
        // The fragment's words: A (mi, ki) at 4 (ki + KF mi); B (ki, ni) at
        // 2 (ni + NF ki), ni = loom_fc * count / 2.
        const std::string words =
            is_a ? "4 * (loom_fc + " + str(cols / 16) + " * loom_fr)"
                 : "2 * (loom_fc * " + str(count / 2) + " + " + str(warp_cols / 8) + " * loom_fr)";
        const std::string frag_offset = layout_expr(
            where, 0,
            {{"row", "loom_fr * " + str(frag_rows)}, {"col", "loom_fc * " + str(step_cols)}});
        body << in << "        const int loom_k = " << frag_offset << ";\n"
             << in << "        loom_ldmatrix_x" << count << (trans ? "_trans" : "") << "(&"
             << value_c.at(o.result) << "[" << words << "], loom_base + "
             << xor_then_add("loom_off", "loom_k", runtime_mask) << ");\n"
             << in << "    }\n"
             << in << "}\n"
             << pad << "}\n";
    }

    /** The C of a function of a register index that is XOR-linear in its
     * bits, given its value at each power of two (table[1 << b]): folds to
     * a constant in an unrolled loop. */
    static std::string linear_in(const std::string &i, const std::vector<int> &table) {
        std::string s;
        for (size_t b = 1, bit = 0; b < table.size(); b <<= 1, bit++) {
            if (!table[b]) continue;
            s += (s.empty() ? "" : " ^ ") +
                 ("((" + i + ") >> " + str(bit) + " & 1) * " + str(table[b]));
        }
        return s.empty() ? "0" : "(" + s + ")";
    }

    /** The identity of a reduction, in type t. */
    std::string identity(const std::string &reduction, Type t) {
        if (reduction == "sum") return t.is_float() ? convert("0.0f", Float(32), t) : "0";
        const bool max = reduction == "max";
        if (t.is_float()) {
            return c_expr(cast(t, make_const(Float(64), max ? -INFINITY : INFINITY)));
        }
        internal_assert(t == Int(32))
            << "tile codegen: a " << reduction << " of " << type_to_string(t);
        return max ? "(-2147483647 - 1)" : "2147483647";
    }

    static std::string combine(const std::string &reduction, const std::string &a,
                               const std::string &b) {
        if (reduction == "sum") return "(" + a + " + " + b + ")";
        return "loom_" + reduction + "(" + a + ", " + b + ")";
    }

    /** A reduction along an axis, in three steps: each thread combines
     * its registers (into the result's, the slice of the operand's
     * layout), then lanes that hold the same results combine by XOR
     * shuffles, then warps through shared memory. Every thread holding a
     * result ends with the same value. */
    void reduce(const TileOp &o, const std::string &pad) {
        const TileType &in = register_operand(o, 0);
        const LinearLayout &l = *in.layout, &out = *o.type.layout;
        const std::string what = "tile codegen: reduce " + o.result;
        internal_assert(out == slice_layout(l, o.axis) && in.elem == o.type.elem)
            << what << " is not in the slice of its operand's layout, or changes its type";
        const Type t = o.type.elem;
        if (packed(t)) zero_words(o.result, pad);
        body << pad << "#pragma unroll\n"
             << pad << "for (int loom_i = 0; loom_i < " << register_count(o.type) << "; loom_i++) "
             << write(o.result, "loom_i", identity(o.reduction, t)) << "\n";
        // Bits of each hardware index that step along the axis; register
        // bits that step nowhere hold the same element again.
        auto along = [&](const std::string &name) {
            std::vector<int> bits;
            int repeats = 0;
            for (const LinearLayout::InDim &d : l.ins()) {
                if (d.name != name) continue;
                for (size_t b = 0; b < d.bases.size(); b++) {
                    bool zero = true, on_axis = false;
                    for (size_t a = 0; a < d.bases[b].size(); a++) {
                        zero &= d.bases[b][a] == 0;
                        on_axis |= int(a) == o.axis && d.bases[b][a] != 0;
                    }
                    if (on_axis) bits.push_back(int(b));
                    if (zero) repeats |= 1 << b;
                }
            }
            return std::make_pair(bits, repeats);
        };
        const int repeats = along("register").second;
        const std::vector<int> kept = sliced_register_bits(l, o.axis);
        std::string slice_register;
        for (size_t b = 0; b < kept.size(); b++) {
            slice_register +=
                (b ? " | " : "") + ("(loom_i >> " + str(kept[b]) + " & 1) << " + str(b));
        }
        const std::string in_loop = pad + "        ";
        open_register_loop(l, pad);
        const std::string x = element(o.operands[0], in_loop);
        std::string cond = repeats ? "(loom_i & " + str(repeats) + ") == 0" : "";
        if (!o.bounds.empty()) {
            cond += (cond.empty() ? "" : " && ") +
                    ("loom_t" + str(o.axis) + " < " + c_expr(o.bounds[0]));
        }
        body << in_loop << "const int loom_j = " << (slice_register.empty() ? "0" : slice_register)
             << ";\n"
             << in_loop << (cond.empty() ? "" : "if (" + cond + ") ")
             << write(o.result, "loom_j", combine(o.reduction, read(o.result, "loom_j"), x))
             << "\n";
        close_register_loop(pad);
        for (int b : along("lane").first) {
            body << pad << "#pragma unroll\n"
                 << pad << "for (int loom_i = 0; loom_i < " << register_count(o.type)
                 << "; loom_i++) {\n"
                 << pad << "    const " << c_type(t) << " loom_y = __shfl_xor_sync(0xffffffffu, "
                 << read(o.result, "loom_i") << ", " << (1 << b) << ");\n"
                 << pad << "    "
                 << write(o.result, "loom_i",
                          combine(o.reduction, read(o.result, "loom_i"), "loom_y"))
                 << "\n"
                 << pad << "}\n";
        }
        const std::vector<int> warp_bits = along("warp").first;
        if (warp_bits.empty()) return;
        // Each warp's partial results by (warp along the axis, element),
        // combined in the same order by every thread.
        const int64_t n = o.type.elements(), warps = int64_t(1) << warp_bits.size();
        scratch_bytes = std::max(scratch_bytes, warps * n * t.bytes());
        std::string warp_index;
        for (size_t k = 0; k < warp_bits.size(); k++) {
            warp_index +=
                (k ? " | " : "") + ("(loom_warp >> " + str(warp_bits[k]) + " & 1) << " + str(k));
        }
        const std::string ty = c_type(t), s = "reinterpret_cast<" + ty + " *>(loom_scratch)";
        open_register_loop(out, pad);
        body << in_loop << s << "[(" << thread_value(warp_index) << ") * " << n
             << " + loom_t0] = " << read(o.result, "loom_i") << ";\n";
        close_register_loop(pad);
        body << pad << "__syncthreads();\n";
        open_register_loop(out, pad);
        body << in_loop << ty << " loom_y = " << s << "[loom_t0];\n";
        for (int64_t w = 1; w < warps; w++) {
            body << in_loop << "loom_y = "
                 << combine(o.reduction, "loom_y", s + "[" + str(w * n) + " + loom_t0]") << ";\n";
        }
        body << in_loop << write(o.result, "loom_i", "loom_y") << "\n";
        close_register_loop(pad);
        body << pad << "__syncthreads();\n";
    }

    /** A register value into another register layout, as
     * plan_conversion says: by renaming registers, by one shuffle per
     * register, or through shared memory. */
    void convert_registers(const TileOp &o, const std::string &pad) {
        const TileType &from = register_operand(o, 0);
        const std::string &src = o.operands[0];
        const ConversionPlan plan = plan_conversion(*from.layout, *o.type.layout);
        const Type t = o.type.elem;
        const int64_t registers = register_count(o.type);
        const std::string in_loop = pad + "    ";
        body << pad << "// " << to_string(plan.kind) << "\n";
        if (plan.kind == ConversionPlan::Registers && packed(t) && !broadcasts.count(src)) {
            // Whole words when pairs stay pairs.
            bool pairs = true;
            for (int64_t i = 0; i + 1 < registers; i += 2) {
                pairs &= plan.source_register[i] % 2 == 0 &&
                         plan.source_register[i + 1] == plan.source_register[i] + 1;
            }
            if (pairs && registers % 2 == 0) {
                std::vector<int> words;
                for (int64_t i = 0; i < registers; i += 2)
                    words.push_back(plan.source_register[i] / 2);
                body << pad << "#pragma unroll\n"
                     << pad << "for (int loom_i = 0; loom_i < " << registers / 2 << "; loom_i++) "
                     << value_c.at(o.result) << "[loom_i] = " << value_c.at(src) << "["
                     << linear_in("loom_i", words) << "];\n";
                return;
            }
        }
        if (packed(t)) zero_words(o.result, pad);
        if (plan.kind == ConversionPlan::Registers || plan.kind == ConversionPlan::Shuffles) {
            body << pad << "#pragma unroll\n"
                 << pad << "for (int loom_i = 0; loom_i < " << registers << "; loom_i++) {\n";
            const std::string x = element(src, in_loop, linear_in("loom_i", plan.source_register));
            if (plan.kind == ConversionPlan::Registers) {
                body << in_loop << write(o.result, "loom_i", x) << "\n";
            } else {
                std::string lane;
                for (size_t b = 0; b < plan.lane_bases.size(); b++) {
                    if (!plan.lane_bases[b]) continue;
                    lane += (lane.empty() ? "" : " ^ ") +
                            ("(loom_lane >> " + str(b) + " & 1) * " + str(plan.lane_bases[b]));
                }
                lane = lane.empty() ? "0" : thread_value(lane);
                body << in_loop << "const " << c_type(t) << " loom_y = __shfl_sync(0xffffffffu, "
                     << x << ", " << lane << " ^ " << linear_in("loom_i", plan.lane_constant)
                     << ");\n"
                     << in_loop << write(o.result, "loom_i", "loom_y") << "\n";
            }
            body << pad << "}\n";
            return;
        }
        // Through shared memory, the tile row-major.
        scratch_bytes = std::max(scratch_bytes, o.type.elements() * t.bytes());
        const std::string s = "reinterpret_cast<" + c_type(t) + " *>(loom_scratch)";
        std::string flat = "loom_t0";
        for (size_t a = 1; a < o.type.shape.size(); a++) {
            flat = "(" + flat + ") * " + str(o.type.shape[a]) + " + loom_t" + str(a);
        }
        const std::string in_regs = pad + "        ";
        open_register_loop(*from.layout, pad);
        const std::string x = element(src, in_regs);
        body << in_regs << s << "[" << flat << "] = " << x << ";\n";
        close_register_loop(pad);
        body << pad << "__syncthreads();\n";
        open_register_loop(*o.type.layout, pad);
        body << in_regs << write(o.result, "loom_i", s + "[" + flat + "]") << "\n";
        close_register_loop(pad);
        body << pad << "__syncthreads();\n";
    }

    void dot(const TileOp &o, const std::string &pad) {
        const TileType &a = register_operand(o, 0), &b = register_operand(o, 1),
                       &c = register_operand(o, 2);
        const int M = o.type.shape[0], N = o.type.shape[1], K = a.shape[1];
        const auto [wm, wn] = mma_warps(program.num_warps, [&](int m, int n) {
            return whole_fragments(M, N, 16, 8, m, n) && whole_fragments(M, K, 16, 16, m, 1) &&
                   whole_fragments(K, N, 16, 8, 1, n) &&
                   *o.type.layout == mma_accumulator_layout(M, N, m, n) &&
                   *a.layout == mma_a_layout(M, K, m, n) && *b.layout == mma_b_layout(K, N, m, n) &&
                   *c.layout == *o.type.layout;
        });
        internal_assert(wm > 0 && o.type.elem == Float(32) && a.elem == b.elem && packed(a.elem))
            << "tile codegen: dot " << o.result
            << " needs f16 or bf16 operands in mma_a_layout and mma_b_layout and an f32 "
               "accumulator in mma_accumulator_layout, for "
            << program.num_warps << " warps";
        const std::string acc = value_c.at(o.result);
        if (o.operands[2] != o.result) {
            body << pad << "#pragma unroll\n"
                 << pad << "for (int loom_i = 0; loom_i < " << storage_count(o.type)
                 << "; loom_i++) " << acc << "[loom_i] = " << value_c.at(o.operands[2])
                 << "[loom_i];\n";
        }
        const int MF = M / wm / 16, NF = N / wn / 8, KF = K / 16;
        const std::string fn =
            a.elem == BFloat(16) ? "loom_mma_m16n8k16_bf16" : "loom_mma_m16n8k16_f16";
        // k outermost: each accumulator sums its products in order of k, as
        // the interpreter does.
        body << pad << "#pragma unroll\n"
             << pad << "for (int loom_ki = 0; loom_ki < " << KF << "; loom_ki++) {\n"
             << pad << "    #pragma unroll\n"
             << pad << "    for (int loom_mi = 0; loom_mi < " << MF << "; loom_mi++) {\n"
             << pad << "        #pragma unroll\n"
             << pad << "        for (int loom_ni = 0; loom_ni < " << NF << "; loom_ni++) {\n"
             << pad << "            float *const loom_c = &" << acc << "[4 * (loom_ni + " << NF
             << " * loom_mi)];\n"
             << pad << "            " << fn << "(loom_c, &" << value_c.at(o.operands[0])
             << "[4 * (loom_ki + " << KF << " * loom_mi)], &" << value_c.at(o.operands[1])
             << "[2 * (loom_ni + " << NF << " * loom_ki)], loom_c);\n"
             << pad << "        }\n"
             << pad << "    }\n"
             << pad << "}\n";
    }
};

}  // namespace

TileKernelSource tile_program_to_cuda(const TileProgram &p,
                                      const std::vector<TileBuffer> &buffers) {
    verify(p);
    return Emitter(p, buffers).kernel();
}

std::string tile_kernel_sources() {
    return std::string(cuda_source("mma")) + cuda_source("ldmatrix") + cuda_source("cp_async") +
           cuda_source("tile_registers");
}

std::string tile_module_source(const std::vector<std::string> &kernels) {
    std::string s = "#include <cuda_fp16.h>\n#include <cuda_bf16.h>\n";
    s += cuda_source("prelude");
    s += tile_kernel_sources();
    for (const std::string &k : kernels) s += k;
    return s;
}

}  // namespace tile
}  // namespace internal
}  // namespace loom
