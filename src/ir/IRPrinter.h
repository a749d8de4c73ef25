// Human-readable text for IR: the format of compile_to_lowered_stmt and of
// LOOM_DEBUG output.
#pragma once

#include <ostream>
#include <string>

#include "loom/IR.h"

namespace loom {

std::ostream &operator<<(std::ostream &s, const Expr &e);
std::ostream &operator<<(std::ostream &s, const Type &t);

namespace internal {

std::ostream &operator<<(std::ostream &s, const Stmt &st);
std::ostream &operator<<(std::ostream &s, const Range &r);
std::string to_string(const Expr &e);
std::string to_string(const Stmt &s);

}  // namespace internal
}  // namespace loom
