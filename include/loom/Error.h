// The exceptions Loom throws for user mistakes, and the assertion used for
// internal invariants.
#pragma once

#include <sstream>
#include <stdexcept>
#include <string>

namespace loom {

/** Base of every exception Loom throws. */
struct Error : std::runtime_error {
    explicit Error(const std::string &msg) : std::runtime_error(msg) {}
};

/** A mistake in an algorithm or schedule, found while defining or compiling. */
struct CompileError : Error {
    explicit CompileError(const std::string &msg) : Error(msg) {}
};

/** A mistake in the arguments of a call to a compiled pipeline. */
struct RuntimeError : Error {
    explicit RuntimeError(const std::string &msg) : Error(msg) {}
};

/** A broken invariant inside Loom itself: a bug in Loom, not in user code. */
struct InternalError : Error {
    explicit InternalError(const std::string &msg) : Error(msg) {}
};

namespace internal {

/** Collects a message with operator<< and throws it as E when destroyed. */
template <typename E> class ErrorReport {
  public:
    ErrorReport(const char *file, int line, const char *condition) {
        if (std::is_same_v<E, InternalError>) {
            msg << "Internal error at " << file << ":" << line;
            if (condition) msg << " (condition failed: " << condition << ")";
            msg << ": ";
        }
    }
    template <typename T> ErrorReport &operator<<(const T &x) {
        msg << x;
        return *this;
    }
    [[noreturn]] ~ErrorReport() noexcept(false) { throw E(msg.str()); }

  private:
    std::ostringstream msg;
};

}  // namespace internal
}  // namespace loom

#define LOOM_ERROR_IF(cond, E) \
    if (!(cond)) {             \
    } else ::loom::internal::ErrorReport<E>(__FILE__, __LINE__, nullptr)

/** user_error << "..." throws a CompileError. */
#define user_error ::loom::internal::ErrorReport<::loom::CompileError>(__FILE__, __LINE__, nullptr)
#define user_assert(c) LOOM_ERROR_IF(!(c), ::loom::CompileError)
#define runtime_error_report \
    ::loom::internal::ErrorReport<::loom::RuntimeError>(__FILE__, __LINE__, nullptr)
#define internal_error \
    ::loom::internal::ErrorReport<::loom::InternalError>(__FILE__, __LINE__, nullptr)
#define internal_assert(c) \
    if (c) {               \
    } else ::loom::internal::ErrorReport<::loom::InternalError>(__FILE__, __LINE__, #c)
