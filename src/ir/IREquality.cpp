#include "ir/IREquality.h"

#include <cstring>

#include "loom/Error.h"

namespace loom {
namespace internal {

namespace {

// A three-way structural comparison. Nodes are compared by kind, then type,
// then fields in a fixed order, so the order is total and consistent with
// structural equality.
class Comparer {
  public:
    int cmp(const Expr &a, const Expr &b) {
        if (a.same_as(b)) return 0;
        if (!a.defined()) return -1;
        if (!b.defined()) return 1;
        if (int c = cmp_int(static_cast<int>(a.node_type()), static_cast<int>(b.node_type())))
            return c;
        if (int c = cmp_type(a.type(), b.type())) return c;
        switch (a.node_type()) {
        case IRNodeType::IntImm: return cmp_int(a.as<IntImm>()->value, b.as<IntImm>()->value);
        case IRNodeType::UIntImm: return cmp_uint(a.as<UIntImm>()->value, b.as<UIntImm>()->value);
        case IRNodeType::FloatImm: {
            // Compare bit patterns so that -0.0 != 0.0 and nan == nan.
            double x = a.as<FloatImm>()->value, y = b.as<FloatImm>()->value;
            uint64_t bx, by;
            std::memcpy(&bx, &x, 8);
            std::memcpy(&by, &y, 8);
            return cmp_uint(bx, by);
        }
        case IRNodeType::StringImm:
            return cmp_str(a.as<StringImm>()->value, b.as<StringImm>()->value);
        case IRNodeType::Cast: return cmp(a.as<Cast>()->value, b.as<Cast>()->value);
        case IRNodeType::Reinterpret:
            return cmp(a.as<Reinterpret>()->value, b.as<Reinterpret>()->value);
        case IRNodeType::Variable: return cmp_str(a.as<Variable>()->name, b.as<Variable>()->name);
#define LOOM_BIN(T) \
    case IRNodeType::T: return cmp2(a.as<T>()->a, a.as<T>()->b, b.as<T>()->a, b.as<T>()->b)
            LOOM_BIN(Add);
            LOOM_BIN(Sub);
            LOOM_BIN(Mul);
            LOOM_BIN(Div);
            LOOM_BIN(Mod);
            LOOM_BIN(Min);
            LOOM_BIN(Max);
            LOOM_BIN(EQ);
            LOOM_BIN(NE);
            LOOM_BIN(LT);
            LOOM_BIN(LE);
            LOOM_BIN(GT);
            LOOM_BIN(GE);
            LOOM_BIN(And);
            LOOM_BIN(Or);
#undef LOOM_BIN
        case IRNodeType::Not: return cmp(a.as<Not>()->a, b.as<Not>()->a);
        case IRNodeType::Select: {
            const Select *x = a.as<Select>(), *y = b.as<Select>();
            if (int c = cmp(x->condition, y->condition)) return c;
            return cmp2(x->true_value, x->false_value, y->true_value, y->false_value);
        }
        case IRNodeType::Load: {
            const Load *x = a.as<Load>(), *y = b.as<Load>();
            if (int c = cmp_str(x->name, y->name)) return c;
            return cmp2(x->index, x->predicate, y->index, y->predicate);
        }
        case IRNodeType::Ramp: {
            const Ramp *x = a.as<Ramp>(), *y = b.as<Ramp>();
            if (int c = cmp_int(x->lanes, y->lanes)) return c;
            return cmp2(x->base, x->stride, y->base, y->stride);
        }
        case IRNodeType::Broadcast: {
            const Broadcast *x = a.as<Broadcast>(), *y = b.as<Broadcast>();
            if (int c = cmp_int(x->lanes, y->lanes)) return c;
            return cmp(x->value, y->value);
        }
        case IRNodeType::Let: {
            const Let *x = a.as<Let>(), *y = b.as<Let>();
            if (int c = cmp_str(x->name, y->name)) return c;
            return cmp2(x->value, x->body, y->value, y->body);
        }
        case IRNodeType::Call: {
            const Call *x = a.as<Call>(), *y = b.as<Call>();
            if (int c = cmp_str(x->name, y->name)) return c;
            if (int c = cmp_int(x->call_type, y->call_type)) return c;
            if (int c = cmp_int(x->value_index, y->value_index)) return c;
            return cmp_exprs(x->args, y->args);
        }
        case IRNodeType::VectorReduce: {
            const VectorReduce *x = a.as<VectorReduce>(), *y = b.as<VectorReduce>();
            if (int c = cmp_int(x->op, y->op)) return c;
            return cmp(x->value, y->value);
        }
        default: internal_error << "IREquality: unknown expression node";
        }
        return 0;
    }

    int cmp(const Stmt &a, const Stmt &b) {
        if (a.same_as(b)) return 0;
        if (!a.defined()) return -1;
        if (!b.defined()) return 1;
        if (int c = cmp_int(static_cast<int>(a.node_type()), static_cast<int>(b.node_type())))
            return c;
        switch (a.node_type()) {
        case IRNodeType::LetStmt: {
            const LetStmt *x = a.as<LetStmt>(), *y = b.as<LetStmt>();
            if (int c = cmp_str(x->name, y->name)) return c;
            if (int c = cmp(x->value, y->value)) return c;
            return cmp(x->body, y->body);
        }
        case IRNodeType::AssertStmt: {
            const AssertStmt *x = a.as<AssertStmt>(), *y = b.as<AssertStmt>();
            return cmp2(x->condition, x->message, y->condition, y->message);
        }
        case IRNodeType::ProducerConsumer: {
            const ProducerConsumer *x = a.as<ProducerConsumer>(), *y = b.as<ProducerConsumer>();
            if (int c = cmp_str(x->name, y->name)) return c;
            if (int c = cmp_int(x->is_producer, y->is_producer)) return c;
            return cmp(x->body, y->body);
        }
        case IRNodeType::For: {
            const For *x = a.as<For>(), *y = b.as<For>();
            if (int c = cmp_str(x->name, y->name)) return c;
            if (int c = cmp_int(static_cast<int>(x->for_type), static_cast<int>(y->for_type)))
                return c;
            if (int c = cmp2(x->min, x->extent, y->min, y->extent)) return c;
            if (int c = cmp_int(x->attributes.gpu_blocks_per_sm, y->attributes.gpu_blocks_per_sm))
                return c;
            return cmp(x->body, y->body);
        }
        case IRNodeType::Store: {
            const Store *x = a.as<Store>(), *y = b.as<Store>();
            if (int c = cmp_str(x->name, y->name)) return c;
            if (int c = cmp2(x->value, x->index, y->value, y->index)) return c;
            return cmp(x->predicate, y->predicate);
        }
        case IRNodeType::Provide: {
            const Provide *x = a.as<Provide>(), *y = b.as<Provide>();
            if (int c = cmp_str(x->name, y->name)) return c;
            if (int c = cmp_exprs(x->values, y->values)) return c;
            return cmp_exprs(x->args, y->args);
        }
        case IRNodeType::Allocate: {
            const Allocate *x = a.as<Allocate>(), *y = b.as<Allocate>();
            if (int c = cmp_str(x->name, y->name)) return c;
            if (int c = cmp_type(x->type, y->type)) return c;
            if (int c = cmp_int(static_cast<int>(x->memory_type), static_cast<int>(y->memory_type)))
                return c;
            if (int c = cmp_int(x->replicated, y->replicated)) return c;
            if (int c = cmp_exprs(x->extents, y->extents)) return c;
            if (int c = cmp(x->condition, y->condition)) return c;
            return cmp(x->body, y->body);
        }
        case IRNodeType::Free: return cmp_str(a.as<Free>()->name, b.as<Free>()->name);
        case IRNodeType::Realize: {
            const Realize *x = a.as<Realize>(), *y = b.as<Realize>();
            if (int c = cmp_str(x->name, y->name)) return c;
            if (int c = cmp_int(x->types.size(), y->types.size())) return c;
            for (size_t i = 0; i < x->types.size(); i++) {
                if (int c = cmp_type(x->types[i], y->types[i])) return c;
            }
            if (int c = cmp_int(static_cast<int>(x->memory_type), static_cast<int>(y->memory_type)))
                return c;
            if (int c = cmp_int(x->replicated, y->replicated)) return c;
            if (int c = cmp_int(x->bounds.size(), y->bounds.size())) return c;
            for (size_t i = 0; i < x->bounds.size(); i++) {
                if (int c = cmp2(x->bounds[i].min, x->bounds[i].extent, y->bounds[i].min,
                                 y->bounds[i].extent))
                    return c;
            }
            if (int c = cmp(x->condition, y->condition)) return c;
            return cmp(x->body, y->body);
        }
        case IRNodeType::Block: {
            const Block *x = a.as<Block>(), *y = b.as<Block>();
            if (int c = cmp(x->first, y->first)) return c;
            return cmp(x->rest, y->rest);
        }
        case IRNodeType::IfThenElse: {
            const IfThenElse *x = a.as<IfThenElse>(), *y = b.as<IfThenElse>();
            if (int c = cmp(x->condition, y->condition)) return c;
            if (int c = cmp(x->then_case, y->then_case)) return c;
            return cmp(x->else_case, y->else_case);
        }
        case IRNodeType::Evaluate: return cmp(a.as<Evaluate>()->value, b.as<Evaluate>()->value);
        case IRNodeType::TileKernel: {
            const TileKernel *x = a.as<TileKernel>(), *y = b.as<TileKernel>();
            if (x->contents != y->contents) return x->contents < y->contents ? -1 : 1;
            if (int c = cmp_int(x->grid.size(), y->grid.size())) return c;
            for (size_t i = 0; i < x->grid.size(); i++) {
                if (int c = cmp(x->grid[i], y->grid[i])) return c;
            }
            if (int c = cmp_int(x->scalar_values.size(), y->scalar_values.size())) return c;
            for (size_t i = 0; i < x->scalar_values.size(); i++) {
                if (int c = cmp(x->scalar_values[i], y->scalar_values[i])) return c;
            }
            return 0;
        }
        default: internal_error << "IREquality: unknown statement node";
        }
        return 0;
    }

  private:
    template <typename T> static int cmp_int(T a, T b) { return a < b ? -1 : (b < a ? 1 : 0); }
    static int cmp_uint(uint64_t a, uint64_t b) { return a < b ? -1 : (b < a ? 1 : 0); }
    static int cmp_str(const std::string &a, const std::string &b) {
        int c = a.compare(b);
        return c < 0 ? -1 : (c > 0 ? 1 : 0);
    }
    static int cmp_type(Type a, Type b) {
        if (int c = cmp_int(a.code, b.code)) return c;
        if (int c = cmp_int(a.bits, b.bits)) return c;
        return cmp_int(a.lanes, b.lanes);
    }
    int cmp2(const Expr &a0, const Expr &a1, const Expr &b0, const Expr &b1) {
        if (int c = cmp(a0, b0)) return c;
        return cmp(a1, b1);
    }
    int cmp_exprs(const std::vector<Expr> &a, const std::vector<Expr> &b) {
        if (int c = cmp_int(a.size(), b.size())) return c;
        for (size_t i = 0; i < a.size(); i++) {
            if (int c = cmp(a[i], b[i])) return c;
        }
        return 0;
    }
};

}  // namespace

bool equal(const Expr &a, const Expr &b) { return Comparer().cmp(a, b) == 0; }
bool equal(const Stmt &a, const Stmt &b) { return Comparer().cmp(a, b) == 0; }
bool less(const Expr &a, const Expr &b) { return Comparer().cmp(a, b) < 0; }

}  // namespace internal
}  // namespace loom
