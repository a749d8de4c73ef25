#include "ir/Util.h"

#include <algorithm>
#include <cctype>
#include <map>
#include <mutex>
#include <sstream>

namespace loom {
namespace internal {

std::string unique_name(const std::string &prefix) {
    // A counter per prefix keeps generated names short and readable ("v$0",
    // "v$1", "sum$0") in printed IR. Funcs, Vars and RDoms may be created from
    // several threads (e.g. parallel tests), hence the lock.
    static std::mutex lock;
    static std::map<std::string, int64_t> counters;
    int64_t n;
    {
        std::lock_guard<std::mutex> guard(lock);
        n = counters[prefix]++;
    }
    return prefix + "$" + std::to_string(n);
}

bool starts_with(const std::string &s, const std::string &prefix) {
    return s.size() >= prefix.size() && s.compare(0, prefix.size(), prefix) == 0;
}

bool ends_with(const std::string &s, const std::string &suffix) {
    return s.size() >= suffix.size() &&
           s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

std::string c_identifier(const std::string &s) {
    std::string c;
    for (char ch : s) c += (std::isalnum(static_cast<unsigned char>(ch)) ? ch : '_');
    return c;
}

std::string join(const std::vector<std::string> &parts, const std::string &sep) {
    std::string r;
    for (size_t i = 0; i < parts.size(); i++) {
        if (i) r += sep;
        r += parts[i];
    }
    return r;
}

namespace {
template <typename T> std::string vec_str(const std::vector<T> &v) {
    std::ostringstream s;
    s << "[";
    for (size_t i = 0; i < v.size(); i++) s << (i ? ", " : "") << v[i];
    s << "]";
    return s.str();
}
}  // namespace

std::string vector_to_string(const std::vector<int> &v) { return vec_str(v); }
std::string vector_to_string(const std::vector<int64_t> &v) { return vec_str(v); }

std::string stage_of_loop(const std::string &loop) {
    for (size_t s = loop.find(".s"); s != std::string::npos; s = loop.find(".s", s + 1)) {
        size_t d = s + 2;
        while (d < loop.size() && std::isdigit(static_cast<unsigned char>(loop[d]))) d++;
        if (d > s + 2 && d < loop.size() && loop[d] == '.') return loop.substr(0, d);
    }
    return loop;
}

std::string func_for_message(const FuncOrigins &origins, const std::string &name) {
    auto it = origins.find(name);
    return it == origins.end() ? "Func " + name : "Func " + name + " (" + it->second + ")";
}

std::string func_of_loop(const std::string &loop) {
    const std::string stage = stage_of_loop(loop);
    return stage.substr(0, stage.rfind(".s"));
}

std::string var_of_loop(const std::string &loop) {
    const std::string stage = stage_of_loop(loop);
    return stage.size() < loop.size() ? loop.substr(stage.size() + 1) : loop;
}

bool buffer_holds_func(const std::string &buffer, const std::string &func) {
    if (buffer == func) return true;
    if (buffer.size() <= func.size() + 1 || !starts_with(buffer, func + ".")) return false;
    return std::all_of(buffer.begin() + func.size() + 1, buffer.end(),
                       [](char c) { return std::isdigit(static_cast<unsigned char>(c)); });
}

bool is_pure_definition_loop(const std::string &loop, const std::string &buffer) {
    const std::string stage = stage_of_loop(loop);
    return stage != loop && ends_with(stage, ".s0") &&
           buffer_holds_func(buffer, func_of_loop(loop));
}

std::string innermost_loop_of_buffer(const std::vector<std::string> &loops,
                                     const std::string &buffer) {
    for (auto l = loops.rbegin(); l != loops.rend(); ++l) {
        if (stage_of_loop(*l) != *l && buffer_holds_func(buffer, func_of_loop(*l))) return *l;
    }
    return "";
}

}  // namespace internal
}  // namespace loom
