#include "ir/IRPrinter.h"

#include <cmath>
#include <iomanip>
#include <sstream>

#include "ir/IRVisitor.h"
#include "loom/IROperator.h"
#include "tile/TileKernel.h"

namespace loom {

std::ostream &operator<<(std::ostream &s, const Type &t) { return s << type_to_string(t); }

namespace internal {

namespace {

// Shortest decimal text that reads back as the same value of the float type.
std::string float_to_string(double v, Type t) {
    if (std::isnan(v)) return "nan";
    if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
    std::string best;
    for (int prec = 1; prec <= 17; prec++) {
        std::ostringstream o;
        o << std::setprecision(prec) << v;
        best = o.str();
        double back = std::stod(best);
        bool same = t.bits == 32 && !t.is_bfloat()
                        ? static_cast<float>(back) == static_cast<float>(v)
                        : back == v;
        if (same) break;
    }
    // Keep a float literal recognizable as one.
    if (best.find_first_of(".e") == std::string::npos) best += ".0";
    return best;
}

std::string escape(const std::string &s) {
    std::string out;
    for (char c : s) {
        switch (c) {
        case '"': out += "\\\""; break;
        case '\\': out += "\\\\"; break;
        case '\n': out += "\\n"; break;
        case '\t': out += "\\t"; break;
        default: out += c;
        }
    }
    return out;
}

class IRPrinter : public IRVisitor {
  public:
    explicit IRPrinter(std::ostream &s) : stream(s) {}

    void print(const Expr &e) {
        if (!e.defined()) {
            stream << "(undefined)";
            return;
        }
        e.accept(this);
    }
    void print(const Stmt &s) {
        if (!s.defined()) {
            do_indent();
            stream << "(undefined)\n";
            return;
        }
        s.accept(this);
    }

  private:
    std::ostream &stream;
    int indent = 0;

    void do_indent() {
        for (int i = 0; i < indent; i++) stream << ' ';
    }
    void print_list(const std::vector<Expr> &v) {
        for (size_t i = 0; i < v.size(); i++) {
            if (i) stream << ", ";
            print(v[i]);
        }
    }
    void binary(const Expr &a, const Expr &b, const char *op) {
        stream << '(';
        print(a);
        stream << ' ' << op << ' ';
        print(b);
        stream << ')';
    }
    void print_body(const Stmt &s) {
        indent += 2;
        print(s);
        indent -= 2;
    }

    void visit(const IntImm *op) override {
        if (op->type == Int(32)) stream << op->value;
        else stream << '(' << op->type << ')' << op->value;
    }
    void visit(const UIntImm *op) override {
        if (op->type.is_bool()) stream << (op->value ? "true" : "false");
        else stream << '(' << op->type << ')' << op->value;
    }
    void visit(const FloatImm *op) override {
        std::string s = float_to_string(op->value, op->type);
        if (op->type == Float(32)) stream << s << 'f';
        else if (op->type == Float(64)) stream << s;
        else stream << '(' << op->type << ')' << s;
    }
    void visit(const StringImm *op) override { stream << '"' << escape(op->value) << '"'; }
    void visit(const Cast *op) override {
        stream << op->type << '(';
        print(op->value);
        stream << ')';
    }
    void visit(const Reinterpret *op) override {
        stream << "reinterpret<" << op->type << ">(";
        print(op->value);
        stream << ')';
    }
    void visit(const Variable *op) override { stream << op->name; }
    void visit(const Add *op) override { binary(op->a, op->b, "+"); }
    void visit(const Sub *op) override { binary(op->a, op->b, "-"); }
    void visit(const Mul *op) override { binary(op->a, op->b, "*"); }
    void visit(const Div *op) override { binary(op->a, op->b, "/"); }
    void visit(const Mod *op) override { binary(op->a, op->b, "%"); }
    void visit(const Min *op) override {
        stream << "min(";
        print(op->a);
        stream << ", ";
        print(op->b);
        stream << ')';
    }
    void visit(const Max *op) override {
        stream << "max(";
        print(op->a);
        stream << ", ";
        print(op->b);
        stream << ')';
    }
    void visit(const EQ *op) override { binary(op->a, op->b, "=="); }
    void visit(const NE *op) override { binary(op->a, op->b, "!="); }
    void visit(const LT *op) override { binary(op->a, op->b, "<"); }
    void visit(const LE *op) override { binary(op->a, op->b, "<="); }
    void visit(const GT *op) override { binary(op->a, op->b, ">"); }
    void visit(const GE *op) override { binary(op->a, op->b, ">="); }
    void visit(const And *op) override { binary(op->a, op->b, "&&"); }
    void visit(const Or *op) override { binary(op->a, op->b, "||"); }
    void visit(const Not *op) override {
        stream << '!';
        print(op->a);
    }
    void visit(const Select *op) override {
        stream << "select(";
        print(op->condition);
        stream << ", ";
        print(op->true_value);
        stream << ", ";
        print(op->false_value);
        stream << ')';
    }
    void visit(const Load *op) override {
        stream << op->name << '[';
        print(op->index);
        stream << ']';
        if (!is_const_one(op->predicate)) {
            stream << " if ";
            print(op->predicate);
        }
    }
    void visit(const Ramp *op) override {
        stream << "ramp(";
        print(op->base);
        stream << ", ";
        print(op->stride);
        stream << ", " << op->lanes << ')';
    }
    void visit(const Broadcast *op) override {
        stream << 'x' << op->lanes << '(';
        print(op->value);
        stream << ')';
    }
    void visit(const Let *op) override {
        stream << "(let " << op->name << " = ";
        print(op->value);
        stream << " in ";
        print(op->body);
        stream << ')';
    }
    void visit(const Call *op) override {
        stream << op->name;
        if (op->call_type == Call::Func && op->value_index != 0) stream << '.' << op->value_index;
        stream << '(';
        print_list(op->args);
        stream << ')';
    }
    void visit(const VectorReduce *op) override {
        static const char *names[] = {"add", "mul", "min", "max", "and", "or"};
        stream << "vector_reduce_" << names[op->op] << '(';
        print(op->value);
        stream << ')';
        if (op->type.lanes > 1) stream << "x" << op->type.lanes;
    }

    void visit(const LetStmt *op) override {
        do_indent();
        stream << "let " << op->name << " = ";
        print(op->value);
        stream << '\n';
        print(op->body);
    }
    void visit(const AssertStmt *op) override {
        do_indent();
        stream << "assert(";
        print(op->condition);
        stream << ", ";
        print(op->message);
        stream << ")\n";
    }
    void visit(const ProducerConsumer *op) override {
        do_indent();
        stream << (op->is_producer ? "produce " : "consume ") << op->name << " {\n";
        print_body(op->body);
        do_indent();
        stream << "}\n";
    }
    void visit(const For *op) override {
        do_indent();
        stream << for_type_name(op->for_type) << " (" << op->name << ", ";
        print(op->min);
        stream << ", ";
        print(op->extent);
        stream << ")";
        if (op->attributes.gpu_blocks_per_sm) {
            stream << " [blocks_per_sm = " << op->attributes.gpu_blocks_per_sm << "]";
        }
        stream << " {\n";
        print_body(op->body);
        do_indent();
        stream << "}\n";
    }
    void visit(const Store *op) override {
        do_indent();
        stream << op->name << '[';
        print(op->index);
        stream << "] = ";
        print(op->value);
        if (!is_const_one(op->predicate)) {
            stream << " if ";
            print(op->predicate);
        }
        stream << '\n';
    }
    void visit(const Provide *op) override {
        do_indent();
        stream << op->name << '(';
        print_list(op->args);
        stream << ") = ";
        if (op->values.size() == 1) {
            print(op->values[0]);
        } else {
            stream << '{';
            print_list(op->values);
            stream << '}';
        }
        stream << '\n';
    }
    void print_memory(MemoryType m, bool replicated) {
        if (m == MemoryType::Stack) stream << " in Stack";
        else if (m == MemoryType::Heap) stream << " in Heap";
        else if (m == MemoryType::Register) stream << " in Register";
        else if (m == MemoryType::Shared) stream << " in Shared";
        else if (m == MemoryType::Global) stream << " in Global";
        if (replicated) stream << ", replicated";
    }
    void visit(const Allocate *op) override {
        do_indent();
        stream << "allocate " << op->name << '[' << op->type;
        for (const Expr &e : op->extents) {
            stream << " * ";
            print(e);
        }
        stream << ']';
        print_memory(op->memory_type, op->replicated);
        if (!is_const_one(op->condition)) {
            stream << " if ";
            print(op->condition);
        }
        stream << '\n';
        print(op->body);
    }
    void visit(const Free *op) override {
        do_indent();
        stream << "free " << op->name << '\n';
    }
    void visit(const Realize *op) override {
        do_indent();
        stream << "realize " << op->name << '(';
        for (size_t i = 0; i < op->bounds.size(); i++) {
            if (i) stream << ", ";
            stream << '[';
            print(op->bounds[i].min);
            stream << ", ";
            print(op->bounds[i].extent);
            stream << ']';
        }
        stream << ')';
        print_memory(op->memory_type, op->replicated);
        if (!is_const_one(op->condition)) {
            stream << " if ";
            print(op->condition);
        }
        stream << " {\n";
        print_body(op->body);
        do_indent();
        stream << "}\n";
    }
    void visit(const Block *op) override {
        print(op->first);
        print(op->rest);
    }
    void visit(const IfThenElse *op) override {
        do_indent();
        const IfThenElse *cur = op;
        stream << "if (";
        while (true) {
            print(cur->condition);
            stream << ") {\n";
            print_body(cur->then_case);
            do_indent();
            stream << '}';
            if (!cur->else_case.defined()) break;
            if (const IfThenElse *nested = cur->else_case.as<IfThenElse>()) {
                stream << " else if (";
                cur = nested;
                continue;
            }
            stream << " else {\n";
            print_body(cur->else_case);
            do_indent();
            stream << '}';
            break;
        }
        stream << '\n';
    }
    void visit(const Evaluate *op) override {
        do_indent();
        print(op->value);
        stream << '\n';
    }
    void visit(const TileKernel *op) override {
        do_indent();
        stream << "tile_kernel " << op->contents->program.name << " grid(";
        for (size_t i = 0; i < op->grid.size(); i++) {
            stream << (i ? ", " : "");
            print(op->grid[i]);
        }
        stream << ")";
        for (size_t i = 0; i < op->scalar_names.size(); i++) {
            stream << (i ? ", " : " with ") << op->scalar_names[i] << " = ";
            print(op->scalar_values[i]);
        }
        stream << " {\n";
        std::istringstream program(tile::to_string(op->contents->program));
        for (std::string line; std::getline(program, line);) {
            do_indent();
            stream << "  " << line << "\n";
        }
        do_indent();
        stream << "}\n";
    }
};

}  // namespace

std::ostream &operator<<(std::ostream &s, const Stmt &st) {
    IRPrinter p(s);
    p.print(st);
    return s;
}

std::ostream &operator<<(std::ostream &s, const Range &r) {
    s << '[';
    IRPrinter p(s);
    p.print(r.min);
    s << ", ";
    p.print(r.extent);
    return s << ']';
}

std::string to_string(const Expr &e) {
    std::ostringstream o;
    o << e;
    return o.str();
}

std::string to_string(const Stmt &s) {
    std::ostringstream o;
    o << s;
    return o.str();
}

}  // namespace internal

std::ostream &operator<<(std::ostream &s, const Expr &e) {
    internal::IRPrinter p(s);
    p.print(e);
    return s;
}

}  // namespace loom
