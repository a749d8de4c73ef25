// A stack of name -> value bindings, for passes that track what is in scope
// (let values, loop bounds). Pushing a name again shadows the previous value.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "loom/Error.h"

namespace loom {
namespace internal {

template <typename T> class Scope {
  public:
    void push(const std::string &name, T value) {
        table[name].push_back(std::move(value));
        generation_++;
    }
    void pop(const std::string &name) {
        generation_++;
        auto it = table.find(name);
        internal_assert(it != table.end() && !it->second.empty()) << "Scope::pop of " << name;
        it->second.pop_back();
        if (it->second.empty()) table.erase(it);
    }
    bool contains(const std::string &name) const { return table.count(name) != 0; }
    const T &get(const std::string &name) const {
        auto it = table.find(name);
        internal_assert(it != table.end()) << "Scope::get of " << name << ", which is not in scope";
        return it->second.back();
    }
    const T *find(const std::string &name) const {
        auto it = table.find(name);
        return it == table.end() ? nullptr : &it->second.back();
    }
    bool empty() const { return table.empty(); }
    /** Changes whenever a binding is pushed or popped, so that a cache of
     * facts derived from the bindings can tell when it is stale. */
    uint64_t generation() const { return generation_; }
    /** Visits the innermost binding of each name. */
    template <typename F> void for_each(F f) const {
        for (const auto &kv : table) f(kv.first, kv.second.back());
    }

  private:
    std::map<std::string, std::vector<T>> table;
    uint64_t generation_ = 0;
};

/** Pushes a binding for the lifetime of this object. */
template <typename T> class ScopedBinding {
  public:
    ScopedBinding(Scope<T> &s, const std::string &n, T v) : scope(&s), name(n) {
        scope->push(name, std::move(v));
    }
    ~ScopedBinding() { scope->pop(name); }
    ScopedBinding(const ScopedBinding &) = delete;
    ScopedBinding &operator=(const ScopedBinding &) = delete;

  private:
    Scope<T> *scope;
    std::string name;
};

}  // namespace internal
}  // namespace loom
