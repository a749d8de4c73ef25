// Per-thread error messages of compiled pipelines.
//
// A failing pipeline (an AssertStmt, an allocation failure) builds its message
// with loom_error_begin / append / end. The message lives in a thread_local
// buffer so that pipelines running concurrently on different threads do not
// mix their messages; loom_do_par_for copies a worker's message back to the
// thread that called it, so the caller of a pipeline always finds the message
// on its own thread.
#include <atomic>
#include <cinttypes>
#include <cstdio>
#include <string>

#include "loom/runtime/loom_runtime.h"

namespace {

thread_local std::string error_buffer;
std::atomic<loom_error_handler_t> error_handler{nullptr};

}  // namespace

extern "C" {

void loom_error_begin(void) { error_buffer.clear(); }

void loom_error_append_string(const char *s) { error_buffer += s ? s : "(null)"; }

void loom_error_append_int(int64_t v) {
    char tmp[32];
    std::snprintf(tmp, sizeof(tmp), "%" PRId64, v);
    error_buffer += tmp;
}

void loom_error_append_float(double v) {
    char tmp[64];
    std::snprintf(tmp, sizeof(tmp), "%g", v);
    error_buffer += tmp;
}

int32_t loom_error_end(void) {
    loom_error_handler_t h = error_handler.load();
    if (h) h(error_buffer.c_str());
    return loom_error_generic;
}

const char *loom_last_error_message(void) { return error_buffer.c_str(); }

void loom_set_error_handler(loom_error_handler_t handler) { error_handler.store(handler); }

}  // extern "C"

namespace loom {
namespace internal {

// Used by the thread pool to move a worker's message to the calling thread.
std::string loom_runtime_take_error_message() { return error_buffer; }
void loom_runtime_set_error_message(const std::string &msg) { error_buffer = msg; }

}  // namespace internal
}  // namespace loom
