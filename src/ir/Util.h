// Small generic helpers shared across the compiler: unique names and string
// utilities.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace loom {
namespace internal {

/** A name no other call returns: "prefix$N", with a counter per prefix.
 * Thread-safe. User names never contain '$', so these never collide with
 * names a user chose. */
std::string unique_name(const std::string &prefix);

bool starts_with(const std::string &s, const std::string &prefix);
bool ends_with(const std::string &s, const std::string &suffix);

/** Joins the strings with a separator: join({"a", "b"}, ", ") == "a, b". */
std::string join(const std::vector<std::string> &parts, const std::string &sep);

/** s with every character that cannot be in a C identifier replaced by _. */
std::string c_identifier(const std::string &s);

/** Where each Func the compiler made comes from, by name: which directive
 * made it for which of the user's Funcs, and how the user places it. */
using FuncOrigins = std::map<std::string, std::string>;

/** "Func f" for a message, or "Func m_partial (what made it)" for a Func
 * the compiler made, so that an error about it names the user's Func, the
 * directive and the call that fixes it. */
std::string func_for_message(const FuncOrigins &origins, const std::string &name);

/** Parts of a loop's name after lowering, func.sK.var ("f.s1.r.x"): its
 * stage ("f.s1"), its Func ("f") and its variable ("r.x"). A name of
 * another form is its own stage and Func, and its own variable. */
std::string stage_of_loop(const std::string &loop);
std::string func_of_loop(const std::string &loop);
std::string var_of_loop(const std::string &loop);

/** Whether a buffer holds Func `func`'s values: it is named after the
 * Func, or it is one element's of a Tuple-valued Func ("f.0", "f.1"). */
bool buffer_holds_func(const std::string &buffer, const std::string &func);

/** Whether `loop` is a loop of the pure definition (stage 0) of the Func
 * whose values `buffer` holds. */
bool is_pure_definition_loop(const std::string &loop, const std::string &buffer);

/** The innermost of `loops` (outermost first) that is a loop of the Func
 * whose values `buffer` holds, or "" if none is. */
std::string innermost_loop_of_buffer(const std::vector<std::string> &loops,
                                     const std::string &buffer);

/** "[1, 2, 3]", for error messages about shapes and coordinates. */
std::string vector_to_string(const std::vector<int> &v);
std::string vector_to_string(const std::vector<int64_t> &v);

}  // namespace internal
}  // namespace loom
