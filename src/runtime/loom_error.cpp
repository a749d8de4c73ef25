// Per-thread error messages of compiled pipelines.
//
// A failing pipeline (an AssertStmt, an allocation failure) builds its message
// with loom_error_begin / append / end. The message lives in a thread_local
// buffer so that pipelines running concurrently on different threads do not
// mix their messages; loom_do_par_for copies a worker's message back to the
// thread that called it, so the caller of a pipeline always finds the message
// on its own thread. The buffer is a plain char array (not a std::string) so
// that AOT libraries need no C++ runtime; messages longer than
// LOOM_ERROR_BUFFER_SIZE - 1 bytes are truncated.
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include <atomic>

#include "loom_runtime_internal.h"

namespace {

thread_local char error_buffer[LOOM_ERROR_BUFFER_SIZE];
thread_local size_t error_length = 0;
std::atomic<loom_error_handler_t> error_handler{nullptr};

void append(const char *s) {
    size_t n = strlen(s);
    size_t room = LOOM_ERROR_BUFFER_SIZE - 1 - error_length;
    if (n > room) n = room;
    memcpy(error_buffer + error_length, s, n);
    error_length += n;
    error_buffer[error_length] = 0;
}

}  // namespace

LOOM_RUNTIME_EXPORT void loom_error_begin(void) {
    error_length = 0;
    error_buffer[0] = 0;
}

LOOM_RUNTIME_EXPORT void loom_error_append_string(const char *s) { append(s ? s : "(null)"); }

LOOM_RUNTIME_EXPORT void loom_error_append_int(int64_t v) {
    char tmp[32];
    snprintf(tmp, sizeof(tmp), "%" PRId64, v);
    append(tmp);
}

LOOM_RUNTIME_EXPORT void loom_error_append_float(double v) {
    char tmp[64];
    snprintf(tmp, sizeof(tmp), "%g", v);
    append(tmp);
}

LOOM_RUNTIME_EXPORT int32_t loom_error_end(void) {
    loom_error_handler_t h = error_handler.load();
    if (h) h(error_buffer);
    return loom_error_generic;
}

LOOM_RUNTIME_EXPORT const char *loom_last_error_message(void) { return error_buffer; }

LOOM_RUNTIME_EXPORT void loom_set_error_handler(loom_error_handler_t handler) {
    error_handler.store(handler);
}

LOOM_RUNTIME_EXPORT const char *loom_type_name(int32_t code, int32_t bits, int32_t lanes) {
    // Names as loom::type_to_string prints them; the result lives in a
    // per-thread buffer until the next call on this thread.
    static thread_local char name[48];
    const char *base = nullptr;
    switch (code) {
    case loom_type_int: base = "int"; break;
    case loom_type_uint: base = bits == 1 ? "bool" : "uint"; break;
    case loom_type_float: base = "float"; break;
    case loom_type_bfloat: base = "bfloat"; break;
    case loom_type_handle: base = "handle"; break;
    default: break;
    }
    if (!base) {
        snprintf(name, sizeof(name), "<type code %d, %d bits>", (int)code, (int)bits);
    } else if ((code == loom_type_uint && bits == 1) || code == loom_type_handle) {
        snprintf(name, sizeof(name), "%s", base);
    } else {
        snprintf(name, sizeof(name), "%s%d", base, (int)bits);
    }
    if (lanes != 1) {
        size_t n = strlen(name);
        snprintf(name + n, sizeof(name) - n, "x%d", (int)lanes);
    }
    return name;
}

LOOM_RUNTIME_EXPORT void loom_runtime_copy_error_message(char *dst, size_t size) {
    if (size == 0) return;
    size_t n = error_length < size - 1 ? error_length : size - 1;
    memcpy(dst, error_buffer, n);
    dst[n] = 0;
}

LOOM_RUNTIME_EXPORT void loom_runtime_set_error_message(const char *msg) {
    loom_error_begin();
    append(msg);
}
