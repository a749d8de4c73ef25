#include "loom/IR.h"

#include "ir/IRVisitor.h"
#include "loom/Error.h"

namespace loom {

Expr::Expr(int8_t x) : Expr(internal::IntImm::make(Int(8), x)) {}
Expr::Expr(int16_t x) : Expr(internal::IntImm::make(Int(16), x)) {}
Expr::Expr(int32_t x) : Expr(internal::IntImm::make(Int(32), x)) {}
Expr::Expr(int64_t x) : Expr(internal::IntImm::make(Int(64), x)) {}
Expr::Expr(uint8_t x) : Expr(internal::UIntImm::make(UInt(8), x)) {}
Expr::Expr(uint16_t x) : Expr(internal::UIntImm::make(UInt(16), x)) {}
Expr::Expr(uint32_t x) : Expr(internal::UIntImm::make(UInt(32), x)) {}
Expr::Expr(uint64_t x) : Expr(internal::UIntImm::make(UInt(64), x)) {}
Expr::Expr(bool x) : Expr(internal::UIntImm::make(Bool(), x ? 1 : 0)) {}
Expr::Expr(float x) : Expr(internal::FloatImm::make(Float(32), x)) {}
Expr::Expr(double x) : Expr(internal::FloatImm::make(Float(64), x)) {}
Expr::Expr(float16_t x) : Expr(internal::FloatImm::make(Float(16), static_cast<float>(x))) {}
Expr::Expr(bfloat16_t x) : Expr(internal::FloatImm::make(BFloat(16), static_cast<float>(x))) {}

namespace internal {

const char *for_type_name(ForType t) {
    switch (t) {
    case ForType::Serial: return "for";
    case ForType::Parallel: return "parallel";
    case ForType::Vectorized: return "vectorized";
    case ForType::Unrolled: return "unrolled";
    case ForType::GPUBlock: return "gpu_block";
    case ForType::GPUThread: return "gpu_thread";
    }
    return "?";
}

Expr IntImm::make(Type t, int64_t value) {
    internal_assert(t.is_int() && t.is_scalar()) << "IntImm of type " << type_to_string(t);
    // Wrap to the width of the type, as two's complement arithmetic would.
    if (t.bits < 64) {
        int shift = 64 - t.bits;
        value = static_cast<int64_t>(static_cast<uint64_t>(value) << shift) >> shift;
    }
    auto *n = new IntImm;
    n->type = t;
    n->value = value;
    return n;
}

Expr UIntImm::make(Type t, uint64_t value) {
    internal_assert(t.is_uint() && t.is_scalar()) << "UIntImm of type " << type_to_string(t);
    if (t.bits < 64) value &= (uint64_t(1) << t.bits) - 1;
    auto *n = new UIntImm;
    n->type = t;
    n->value = value;
    return n;
}

Expr FloatImm::make(Type t, double value) {
    internal_assert(t.is_float() && t.is_scalar()) << "FloatImm of type " << type_to_string(t);
    auto *n = new FloatImm;
    n->type = t;
    // Round to the precision of the type so constants mean what they will compute.
    if (t.is_bfloat()) value = static_cast<float>(bfloat16_t(static_cast<float>(value)));
    else if (t.bits == 16) value = static_cast<float>(float16_t(static_cast<float>(value)));
    else if (t.bits == 32) value = static_cast<float>(value);
    n->value = value;
    return n;
}

Expr StringImm::make(const std::string &value) {
    auto *n = new StringImm;
    n->type = Handle();
    n->value = value;
    return n;
}

Expr Cast::make(Type t, Expr value) {
    internal_assert(value.defined());
    internal_assert(t.lanes == value.type().lanes) << "Cast changes the number of lanes";
    auto *n = new Cast;
    n->type = t;
    n->value = std::move(value);
    return n;
}

Expr Reinterpret::make(Type t, Expr value) {
    internal_assert(value.defined());
    internal_assert(t.bits * t.lanes == value.type().bits * value.type().lanes)
        << "Reinterpret between types of different widths";
    auto *n = new Reinterpret;
    n->type = t;
    n->value = std::move(value);
    return n;
}

Expr Variable::make(Type t, const std::string &name, ParameterPtr param, ReductionDomainPtr rdom) {
    auto *n = new Variable;
    n->type = t;
    n->name = name;
    n->param = std::move(param);
    n->rdom = std::move(rdom);
    return n;
}

template <typename T> Expr BinaryOpNode<T>::make(Expr a, Expr b) {
    internal_assert(a.defined() && b.defined()) << "BinaryOp of undefined";
    internal_assert(a.type() == b.type())
        << "BinaryOp of mismatched types " << type_to_string(a.type()) << " and "
        << type_to_string(b.type());
    auto *n = new T;
    n->type = a.type();
    n->a = std::move(a);
    n->b = std::move(b);
    return n;
}
template struct BinaryOpNode<Add>;
template struct BinaryOpNode<Sub>;
template struct BinaryOpNode<Mul>;
template struct BinaryOpNode<Div>;
template struct BinaryOpNode<Mod>;
template struct BinaryOpNode<Min>;
template struct BinaryOpNode<Max>;

template <typename T> Expr CmpOpNode<T>::make(Expr a, Expr b) {
    internal_assert(a.defined() && b.defined()) << "CmpOp of undefined";
    internal_assert(a.type() == b.type())
        << "CmpOp of mismatched types " << type_to_string(a.type()) << " and "
        << type_to_string(b.type());
    auto *n = new T;
    n->type = Bool(a.type().lanes);
    n->a = std::move(a);
    n->b = std::move(b);
    return n;
}
template struct CmpOpNode<EQ>;
template struct CmpOpNode<NE>;
template struct CmpOpNode<LT>;
template struct CmpOpNode<LE>;
template struct CmpOpNode<GT>;
template struct CmpOpNode<GE>;

Expr And::make(Expr a, Expr b) {
    internal_assert(a.defined() && b.defined() && a.type().is_bool() && a.type() == b.type())
        << "And of non-bool or mismatched operands";
    auto *n = new And;
    n->type = a.type();
    n->a = std::move(a);
    n->b = std::move(b);
    return n;
}

Expr Or::make(Expr a, Expr b) {
    internal_assert(a.defined() && b.defined() && a.type().is_bool() && a.type() == b.type())
        << "Or of non-bool or mismatched operands";
    auto *n = new Or;
    n->type = a.type();
    n->a = std::move(a);
    n->b = std::move(b);
    return n;
}

Expr Not::make(Expr a) {
    internal_assert(a.defined() && a.type().is_bool()) << "Not of non-bool";
    auto *n = new Not;
    n->type = a.type();
    n->a = std::move(a);
    return n;
}

Expr Select::make(Expr condition, Expr true_value, Expr false_value) {
    internal_assert(condition.defined() && true_value.defined() && false_value.defined());
    internal_assert(condition.type().is_bool()) << "Select condition is not bool";
    internal_assert(true_value.type() == false_value.type())
        << "Select of mismatched types " << type_to_string(true_value.type()) << " and "
        << type_to_string(false_value.type());
    internal_assert(condition.type().is_scalar() ||
                    condition.type().lanes == true_value.type().lanes)
        << "Select condition has the wrong number of lanes";
    auto *n = new Select;
    n->type = true_value.type();
    n->condition = std::move(condition);
    n->true_value = std::move(true_value);
    n->false_value = std::move(false_value);
    return n;
}

Expr Load::make(Type t, const std::string &name, Expr index, Expr predicate, ParameterPtr param,
                ModulusRemainder alignment) {
    internal_assert(index.defined() && index.type().is_int()) << "Load index must be an int";
    internal_assert(t.lanes == index.type().lanes) << "Load lanes mismatch";
    if (!predicate.defined()) predicate = UIntImm::make(Bool(), 1);
    if (predicate.type().lanes != t.lanes) {
        internal_assert(predicate.type().is_scalar());
        predicate = Broadcast::make(predicate, t.lanes);
    }
    auto *n = new Load;
    n->type = t;
    n->name = name;
    n->index = std::move(index);
    n->predicate = std::move(predicate);
    n->param = std::move(param);
    n->alignment = alignment;
    return n;
}

Expr Ramp::make(Expr base, Expr stride, int lanes) {
    internal_assert(base.defined() && stride.defined() && lanes > 1);
    internal_assert(base.type().is_scalar() && base.type() == stride.type())
        << "Ramp base and stride must be scalars of one type";
    auto *n = new Ramp;
    n->type = base.type().with_lanes(lanes);
    n->base = std::move(base);
    n->stride = std::move(stride);
    n->lanes = lanes;
    return n;
}

Expr Broadcast::make(Expr value, int lanes) {
    internal_assert(value.defined() && value.type().is_scalar() && lanes > 1)
        << "Broadcast of a vector or to one lane";
    auto *n = new Broadcast;
    n->type = value.type().with_lanes(lanes);
    n->value = std::move(value);
    n->lanes = lanes;
    return n;
}

Expr Let::make(const std::string &name, Expr value, Expr body) {
    internal_assert(value.defined() && body.defined());
    auto *n = new Let;
    n->type = body.type();
    n->name = name;
    n->value = std::move(value);
    n->body = std::move(body);
    return n;
}

Expr Call::make(Type t, const std::string &name, const std::vector<Expr> &args, CallType call_type,
                FunctionPtr func, int value_index, ParameterPtr param, BufferPtr buffer) {
    for (const Expr &a : args)
        internal_assert(a.defined()) << "Call to " << name << " has an undefined argument";
    auto *n = new Call;
    n->type = t;
    n->name = name;
    n->args = args;
    n->call_type = call_type;
    n->func = std::move(func);
    n->value_index = value_index;
    n->param = std::move(param);
    n->buffer = std::move(buffer);
    return n;
}

Expr VectorReduce::make(Op op, Expr value, int lanes) {
    internal_assert(value.defined() && value.type().lanes % lanes == 0)
        << "VectorReduce to a lane count that does not divide the input's";
    auto *n = new VectorReduce;
    n->type = value.type().with_lanes(lanes);
    n->op = op;
    n->value = std::move(value);
    return n;
}

Stmt LetStmt::make(const std::string &name, Expr value, Stmt body) {
    internal_assert(value.defined() && body.defined()) << "LetStmt " << name;
    auto *n = new LetStmt;
    n->name = name;
    n->value = std::move(value);
    n->body = std::move(body);
    return n;
}

Stmt AssertStmt::make(Expr condition, Expr message) {
    internal_assert(condition.defined() && condition.type().is_bool() && message.defined());
    auto *n = new AssertStmt;
    n->condition = std::move(condition);
    n->message = std::move(message);
    return n;
}

Stmt ProducerConsumer::make(const std::string &name, bool is_producer, Stmt body) {
    internal_assert(body.defined());
    auto *n = new ProducerConsumer;
    n->name = name;
    n->is_producer = is_producer;
    n->body = std::move(body);
    return n;
}

Stmt For::make(const std::string &name, Expr min, Expr extent, ForType for_type, Stmt body,
               const LoopAttributes &attributes) {
    internal_assert(min.defined() && extent.defined() && body.defined()) << "For " << name;
    internal_assert(min.type().is_scalar() && extent.type().is_scalar() && min.type().is_int() &&
                    extent.type() == min.type())
        << "For " << name << " has non-int or mismatched bounds";
    auto *n = new For;
    n->name = name;
    n->min = std::move(min);
    n->extent = std::move(extent);
    n->for_type = for_type;
    n->body = std::move(body);
    n->attributes = attributes;
    return n;
}

Stmt Store::make(const std::string &name, Expr value, Expr index, Expr predicate,
                 ParameterPtr param, ModulusRemainder alignment) {
    internal_assert(value.defined() && index.defined()) << "Store to " << name;
    internal_assert(value.type().lanes == index.type().lanes) << "Store lanes mismatch";
    if (!predicate.defined()) predicate = UIntImm::make(Bool(), 1);
    if (predicate.type().lanes != value.type().lanes) {
        internal_assert(predicate.type().is_scalar());
        predicate = Broadcast::make(predicate, value.type().lanes);
    }
    auto *n = new Store;
    n->name = name;
    n->value = std::move(value);
    n->index = std::move(index);
    n->predicate = std::move(predicate);
    n->param = std::move(param);
    n->alignment = alignment;
    return n;
}

Stmt Provide::make(const std::string &name, const std::vector<Expr> &values,
                   const std::vector<Expr> &args) {
    internal_assert(!values.empty()) << "Provide to " << name << " with no values";
    for (const Expr &v : values)
        internal_assert(v.defined()) << "Provide of undefined value to " << name;
    for (const Expr &a : args)
        internal_assert(a.defined()) << "Provide with undefined arg to " << name;
    auto *n = new Provide;
    n->name = name;
    n->values = values;
    n->args = args;
    return n;
}

Stmt Allocate::make(const std::string &name, Type type, MemoryType memory_type,
                    const std::vector<Expr> &extents, Expr condition, Stmt body, bool replicated) {
    internal_assert(body.defined()) << "Allocate " << name;
    internal_assert(!replicated || memory_type == MemoryType::Register)
        << "Allocate " << name << ": replicated storage is Register";
    if (!condition.defined()) condition = UIntImm::make(Bool(), 1);
    auto *n = new Allocate;
    n->name = name;
    n->type = type;
    n->memory_type = memory_type;
    n->extents = extents;
    n->condition = std::move(condition);
    n->body = std::move(body);
    n->replicated = replicated;
    return n;
}

Stmt Free::make(const std::string &name) {
    auto *n = new Free;
    n->name = name;
    return n;
}

Stmt Realize::make(const std::string &name, const std::vector<Type> &types, MemoryType memory_type,
                   const Region &bounds, Expr condition, Stmt body, bool replicated) {
    internal_assert(body.defined()) << "Realize " << name;
    internal_assert(!replicated || memory_type == MemoryType::Register)
        << "Realize " << name << ": replicated storage is Register";
    if (!condition.defined()) condition = UIntImm::make(Bool(), 1);
    auto *n = new Realize;
    n->name = name;
    n->types = types;
    n->memory_type = memory_type;
    n->bounds = bounds;
    n->condition = std::move(condition);
    n->body = std::move(body);
    n->replicated = replicated;
    return n;
}

Stmt Block::make(Stmt first, Stmt rest) {
    if (!first.defined()) return rest;
    if (!rest.defined()) return first;
    auto *n = new Block;
    n->first = std::move(first);
    n->rest = std::move(rest);
    return n;
}

Stmt Block::make(const std::vector<Stmt> &stmts) {
    Stmt result;
    for (auto it = stmts.rbegin(); it != stmts.rend(); ++it) result = make(*it, result);
    return result;
}

Stmt IfThenElse::make(Expr condition, Stmt then_case, Stmt else_case) {
    internal_assert(condition.defined() && condition.type().is_bool() && then_case.defined());
    auto *n = new IfThenElse;
    n->condition = std::move(condition);
    n->then_case = std::move(then_case);
    n->else_case = std::move(else_case);
    return n;
}

Stmt TileKernel::make(std::shared_ptr<const tile::TileKernelContents> contents,
                      std::vector<Expr> grid, std::vector<std::string> scalar_names,
                      std::vector<Expr> scalar_values) {
    internal_assert(contents && scalar_names.size() == scalar_values.size());
    for (const Expr &e : grid) internal_assert(e.defined() && e.type().is_int());
    for (const Expr &e : scalar_values) internal_assert(e.defined());
    auto *n = new TileKernel;
    n->contents = std::move(contents);
    n->grid = std::move(grid);
    n->scalar_names = std::move(scalar_names);
    n->scalar_values = std::move(scalar_values);
    return n;
}

Stmt Evaluate::make(Expr value) {
    internal_assert(value.defined());
    auto *n = new Evaluate;
    n->value = std::move(value);
    return n;
}

}  // namespace internal
}  // namespace loom
