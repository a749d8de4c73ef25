// The tile IR's verifier and printer.
#include "tile/TileIR.h"

#include <map>
#include <sstream>

#include "ir/IRPrinter.h"
#include "loom/Error.h"

namespace loom {
namespace internal {
namespace tile {

int64_t TileType::elements() const {
    int64_t n = 1;
    for (int e : shape) n *= e;
    return n;
}

TileOp make_op(TileOpKind kind, const std::string &result, TileType type,
               std::vector<std::string> operands) {
    TileOp o;
    o.kind = kind;
    o.result = result;
    o.type = std::move(type);
    o.operands = std::move(operands);
    return o;
}

TileStmt op_stmt(TileOp o) { return {std::make_shared<TileOp>(std::move(o)), nullptr}; }

Expr tile_coordinate(int axis) { return Variable::make(Int(32), "_i" + std::to_string(axis)); }

bool is_tile_coordinate(const std::string &name, int *axis) {
    if (name != "_i0" && name != "_i1") return false;
    if (axis) *axis = name[2] - '0';
    return true;
}

std::vector<int> access_axes(const TileOp &o, size_t tile_rank) {
    if (!o.axes.empty()) return o.axes;
    std::vector<int> identity(tile_rank);
    for (size_t i = 0; i < tile_rank; i++) identity[i] = int(i);
    return identity;
}

namespace {

const char *kind_name(TileOpKind k) {
    switch (k) {
    case TileOpKind::Zeros: return "zeros";
    case TileOpKind::Load: return "load";
    case TileOpKind::Store: return "store";
    case TileOpKind::Map: return "map";
    case TileOpKind::Broadcast: return "broadcast";
    case TileOpKind::Reduce: return "reduce";
    case TileOpKind::Dot: return "dot";
    case TileOpKind::ConvertLayout: return "convert_layout";
    case TileOpKind::AsyncCopy: return "async_copy";
    case TileOpKind::AsyncCommit: return "async_commit";
    case TileOpKind::AsyncWait: return "async_wait";
    case TileOpKind::Barrier: return "barrier";
    }
    return "?";
}

std::string shape_string(const std::vector<int> &shape) {
    std::string s;
    for (size_t i = 0; i < shape.size(); i++) s += (i ? "x" : "") + std::to_string(shape[i]);
    return s;
}

std::string type_string(const TileType &t) {
    std::string s = type_to_string(t.elem) + "[" + shape_string(t.shape) + "]";
    if (t.space == MemorySpace::Shared) s += " shared";
    if (t.slots > 1) s += " x" + std::to_string(t.slots) + " slots";
    if (!t.layout_name.empty()) s += " #" + t.layout_name;
    return s;
}

class Verifier {
  public:
    void stmts(const std::vector<TileStmt> &body) {
        for (const TileStmt &s : body) {
            if (s.loop) {
                stmts(s.loop->body);
            } else {
                op(*s.op);
            }
        }
    }

  private:
    std::map<std::string, TileType> defined;

    const TileType &operand(const TileOp &o, size_t i) {
        internal_assert(i < o.operands.size())
            << "tile op " << kind_name(o.kind) << " " << o.result << " lacks operand " << i;
        auto it = defined.find(o.operands[i]);
        internal_assert(it != defined.end())
            << "tile value " << o.operands[i] << " is used by " << kind_name(o.kind) << " "
            << o.result << " before it is defined";
        return it->second;
    }

    void op(const TileOp &o) {
        const std::string what = std::string(kind_name(o.kind)) + " " + o.result;
        for (size_t i = 0; i < o.operands.size(); i++) operand(o, i);
        const std::vector<int> &shape = o.type.shape;
        switch (o.kind) {
        case TileOpKind::Load:
        case TileOpKind::AsyncCopy:
        case TileOpKind::Store: {
            const size_t rank =
                o.kind == TileOpKind::Store ? operand(o, 0).shape.size() : shape.size();
            const std::vector<int> axes = access_axes(o, rank);
            internal_assert(!o.buffer.empty() && o.origin.size() == axes.size() &&
                            o.bounds.size() == axes.size())
                << what << ": a buffer, and an origin and bounds per buffer dimension";
            std::vector<int> uses(rank, 0);
            for (int a : axes) {
                internal_assert(a >= -1 && a < int(rank) && (a < 0 || uses[a]++ == 0))
                    << what << ": buffer dimensions follow distinct tile axes";
            }
            if (o.kind == TileOpKind::AsyncCopy) {
                internal_assert(o.type.space == MemorySpace::Shared)
                    << what << ": async copies write shared memory";
            }
            internal_assert(o.type.slots >= 1) << what << ": " << o.type.slots << " slots";
            break;
        }
        case TileOpKind::Map:
            internal_assert(o.fn.defined() && o.fn.type() == o.type.elem)
                << what << ": its function must be of the result's element type";
            for (size_t i = 0; i < o.operands.size(); i++) {
                internal_assert(operand(o, i).shape == shape)
                    << what << ": operand " << o.operands[i] << " has shape "
                    << shape_string(operand(o, i).shape) << ", the result " << shape_string(shape);
            }
            break;
        case TileOpKind::Broadcast: {
            const TileType &in = operand(o, 0);
            internal_assert(in.shape.size() == 1 && shape.size() == 2 && o.axis >= 0 &&
                            o.axis < 2 && in.shape[0] == shape[1 - o.axis])
                << what << ": a 1-D tile broadcast along one axis of a 2-D one";
            break;
        }
        case TileOpKind::Reduce: {
            const TileType &in = operand(o, 0);
            internal_assert(in.shape.size() == 2 && shape.size() == 1 && o.axis >= 0 &&
                            o.axis < 2 && shape[0] == in.shape[1 - o.axis])
                << what << ": a 2-D tile reduced along one axis";
            internal_assert(o.reduction == "sum" || o.reduction == "max" || o.reduction == "min")
                << what << ": reduction " << o.reduction;
            internal_assert(o.bounds.size() <= 1 &&
                            (o.bounds.empty() || o.bounds[0].type() == Int(32)))
                << what << ": a reduction is masked past one Int(32) index of its axis";
            break;
        }
        case TileOpKind::Dot: {
            const TileType &a = operand(o, 0), &b = operand(o, 1), &c = operand(o, 2);
            internal_assert(a.shape.size() == 2 && b.shape.size() == 2 && c.shape.size() == 2 &&
                            a.shape[1] == b.shape[0] && c.shape[0] == a.shape[0] &&
                            c.shape[1] == b.shape[1] && shape == c.shape)
                << what << ": dot of " << shape_string(a.shape) << " by " << shape_string(b.shape)
                << " into " << shape_string(c.shape);
            internal_assert(c.elem == o.type.elem) << what << ": the accumulator's type changes";
            break;
        }
        case TileOpKind::ConvertLayout:
            internal_assert(operand(o, 0).shape == shape && operand(o, 0).elem == o.type.elem)
                << what << ": a layout conversion keeps shape and type";
            internal_assert(!o.slot.defined() || operand(o, 0).space == MemorySpace::Shared)
                << what << ": only a shared value has slots to read";
            break;
        default: break;
        }
        if (o.type.layout) {
            internal_assert(o.type.layout->total_out_size() == o.type.elements())
                << what << ": its layout covers " << o.type.layout->total_out_size()
                << " elements of " << o.type.elements();
        }
        if (!o.result.empty()) defined[o.result] = o.type;
    }
};

class Printer {
  public:
    std::ostringstream out;
    void stmts(const std::vector<TileStmt> &body, int indent) {
        for (const TileStmt &s : body) {
            const std::string pad(indent * 2, ' ');
            if (s.loop) {
                out << pad << "for " << s.loop->var << " in [" << s.loop->min << ", " << s.loop->min
                    << " + " << s.loop->extent << "):\n";
                stmts(s.loop->body, indent + 1);
            } else {
                out << pad;
                op(*s.op);
                out << "\n";
            }
        }
    }

  private:
    void exprs(const std::vector<Expr> &es) {
        for (size_t i = 0; i < es.size(); i++) out << (i ? ", " : "") << es[i];
    }
    void op(const TileOp &o) {
        if (!o.result.empty()) out << "%" << o.result << " = ";
        out << kind_name(o.kind);
        if (o.kind == TileOpKind::Reduce) out << "." << o.reduction;
        if (o.kind == TileOpKind::Map) out << "(" << o.fn << ")";
        if (!o.instruction.empty()) out << "." << o.instruction;
        if (!o.buffer.empty()) {
            out << " " << o.buffer << "[";
            exprs(o.origin);
            out << "]";
        }
        if (!o.axes.empty()) {
            out << " axes(";
            for (size_t i = 0; i < o.axes.size(); i++) out << (i ? ", " : "") << o.axes[i];
            out << ")";
        }
        for (size_t i = 0; i < o.operands.size(); i++) out << (i ? ", %" : " %") << o.operands[i];
        if (o.slot.defined()) out << " slot " << o.slot;
        if (o.axis >= 0) out << " axis " << o.axis;
        if (o.kind == TileOpKind::AsyncWait) out << " " << o.pending;
        if (!o.bounds.empty()) {
            out << " masked past (";
            exprs(o.bounds);
            out << ")";
        }
        if (!o.result.empty()) out << " : " << type_string(o.type);
    }
};

}  // namespace

void verify(const TileProgram &p) {
    internal_assert(p.num_warps > 0) << "tile program " << p.name << " has no warps";
    Verifier().stmts(p.body);
}

std::string to_string(const TileProgram &p) {
    Printer printer;
    printer.out << "tile_program " << p.name << "(num_warps=" << p.num_warps << ") grid(";
    for (size_t i = 0; i < p.grid.size(); i++) printer.out << (i ? ", " : "") << p.grid[i];
    printer.out << "):\n";
    printer.stmts(p.body, 1);
    return printer.out.str();
}

}  // namespace tile
}  // namespace internal
}  // namespace loom
