// Common tile values (see the header).
#include "tile/EliminateCommonTiles.h"

#include <map>
#include <sstream>

#include "ir/IREquality.h"
#include "ir/IRMutator.h"
#include "ir/IRPrinter.h"
#include "ir/IRVisitor.h"
#include "ir/Substitute.h"
#include "loom/IROperator.h"

namespace loom {
namespace internal {
namespace tile {

namespace {

void count_definitions(const std::vector<TileStmt> &body, std::map<std::string, int> *defs) {
    for_each_op(body, [&](const TileOp &o) {
        if (!o.result.empty()) (*defs)[o.result]++;
    });
}

class Eliminate {
  public:
    explicit Eliminate(const TileProgram &p) { count_definitions(p.body, &defs); }

    void list(std::vector<TileStmt> &body) {
        // Ops available for reuse in this list, by what they compute.
        std::map<std::string, std::string> available;
        std::vector<TileStmt> out;
        for (TileStmt &s : body) {
            if (s.loop) {
                // A loop's body reuses its own values only: one from before
                // the loop may be computed from a value the loop carries.
                std::vector<const TileOp *> outer;
                std::swap(outer, maps);
                list(s.loop->body);
                maps = outer;
                // Values the loop redefines change what was computed from
                // them before it.
                std::map<std::string, int> inside;
                count_definitions(s.loop->body, &inside);
                for (const auto &[name, n] : inside) version[name]++;
                out.push_back(s);
                continue;
            }
            TileOp &o = *s.op;
            for (std::string &x : o.operands) {
                auto r = replaced.find(x);
                if (r != replaced.end()) x = r->second;
            }
            if (o.kind == TileOpKind::Map) {
                normalize(o);
                for (const TileOp *a : maps) reuse(*a, o);
                // A copy is its operand.
                const Variable *v = o.fn.as<Variable>();
                if (v && v->name == "_0" && o.operands.size() == 1 && defs[o.result] == 1 &&
                    defs[o.operands[0]] == 1 && o.type.elem == v->type) {
                    replaced[o.result] = o.operands[0];
                    continue;
                }
            }
            if ((o.kind == TileOpKind::Map || o.kind == TileOpKind::Broadcast) &&
                defs[o.result] == 1) {
                const std::string k = key(o);
                auto earlier = available.find(k);
                if (earlier != available.end()) {
                    replaced[o.result] = earlier->second;
                    continue;
                }
                available[k] = o.result;
                if (o.kind == TileOpKind::Map && !o.operands.empty()) {
                    maps.push_back(&o);
                    std::vector<int> &v = a_versions[&o];
                    for (const std::string &x : o.operands) v.push_back(version[x]);
                }
            }
            if (!o.result.empty()) version[o.result]++;
            out.push_back(s);
        }
        body = out;
    }

  private:
    std::map<std::string, int> defs, version;
    /** The maps of the list being processed, whose results later maps may
     * read instead of computing them again. */
    std::vector<const TileOp *> maps;
    std::map<std::string, std::string> replaced;

    /** Each operand once, the function renumbered to match. */
    static void normalize(TileOp &o) {
        std::vector<std::string> operands;
        std::map<std::string, Expr> renumber;
        for (size_t i = 0; i < o.operands.size(); i++) {
            size_t at = 0;
            while (at < operands.size() && operands[at] != o.operands[i]) at++;
            if (at == operands.size()) operands.push_back(o.operands[i]);
            if (at != i) {
                Type t;
                if (find_type(o.fn, "_" + std::to_string(i), &t))
                    renumber["_" + std::to_string(i)] = Variable::make(t, "_" + std::to_string(at));
            }
        }
        if (!renumber.empty()) o.fn = substitute(renumber, o.fn);
        o.operands = operands;
    }

    /** Where b's function computes a's (of operands b has too, none
     * redefined since a), b reads a's result instead. */
    void reuse(const TileOp &a, TileOp &b) {
        if (a.type.shape != b.type.shape || a.fn.as<Variable>()) return;
        std::map<std::string, Expr> in_b;
        for (size_t k = 0; k < a.operands.size(); k++) {
            size_t j = 0;
            while (j < b.operands.size() && b.operands[j] != a.operands[k]) j++;
            if (j == b.operands.size() || a_versions.at(&a)[k] != version[a.operands[k]]) return;
            Type t;
            if (!find_type(a.fn, "_" + std::to_string(k), &t)) continue;
            in_b["_" + std::to_string(k)] = Variable::make(t, "_" + std::to_string(j));
        }
        const Expr target = substitute(in_b, a.fn);
        struct Replace : IRMutator {
            Expr target, with;
            bool any = false;
            using IRMutator::mutate;
            Expr mutate(const Expr &e) override {
                if (e.type() == target.type() && equal(e, target)) {
                    any = true;
                    return with;
                }
                return IRMutator::mutate(e);
            }
        } r;
        r.target = target;
        r.with = Variable::make(a.fn.type(), "_" + std::to_string(b.operands.size()));
        Expr fn = r.mutate(b.fn);
        if (!r.any) return;
        b.fn = fn;
        b.operands.push_back(a.result);
        drop_unused(b);
    }

    /** Operands b's function no longer reads, dropped. */
    static void drop_unused(TileOp &b) {
        std::vector<std::string> operands;
        std::map<std::string, Expr> renumber;
        for (size_t i = 0; i < b.operands.size(); i++) {
            Type t;
            if (!find_type(b.fn, "_" + std::to_string(i), &t)) continue;
            renumber["_" + std::to_string(i)] =
                Variable::make(t, "_" + std::to_string(operands.size()));
            operands.push_back(b.operands[i]);
        }
        b.fn = substitute(renumber, b.fn);
        b.operands = operands;
    }

    /** The versions of each available map's operands when it was made. */
    std::map<const TileOp *, std::vector<int>> a_versions;

    /** Whether e reads Variable `name`, and its type. */
    static bool find_type(const Expr &e, const std::string &name, Type *t);

    std::string key(const TileOp &o) {
        std::ostringstream k;
        k << int(o.kind) << "|" << o.fn << "|" << o.axis << "|" << type_to_string(o.type.elem);
        for (int d : o.type.shape) k << "x" << d;
        for (const std::string &x : o.operands) k << "|" << x << "@" << version[x];
        return k.str();
    }
};

bool Eliminate::find_type(const Expr &e, const std::string &name, Type *t) {
    Type found;
    bool any = false;
    struct Find : IRVisitor {
        const std::string *name;
        Type *found;
        bool *any;
        using IRVisitor::visit;
        void visit(const Variable *op) override {
            if (op->name == *name) *found = op->type, *any = true;
        }
    } f;
    f.name = &name;
    f.found = &found;
    f.any = &any;
    if (e.defined()) e.accept(&f);
    *t = found;
    return any;
}

}  // namespace

void eliminate_common_tiles(TileProgram &p) { Eliminate(p).list(p.body); }

}  // namespace tile
}  // namespace internal
}  // namespace loom
