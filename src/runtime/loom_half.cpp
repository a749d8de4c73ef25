// Float16 conversion helpers for targets without F16C.
//
// LLVM 14 lowers half <-> float conversions on x86 without F16C to the
// libcalls __gnu_h2f_ieee, __gnu_f2h_ieee and __truncdfhf2, passing the half
// as an i16 in a general register. Those are not in glibc (and libgcc's
// __extendhfsf2 family uses a different ABI), so the JIT binds the libcall
// names to these functions. They are not exported under the libcall names, so
// they cannot interpose on anything else in the process.
//
// AOT libraries have no JIT to bind names, so their copy of the runtime
// (LOOM_RUNTIME_AOT) also defines the libcall names, as weak aliases: libgcc
// does not define __gnu_h2f_ieee / __gnu_f2h_ieee on x86-64, and its
// __truncdfhf2 returns the half in an SSE register where LLVM 14 expects it
// in a general register, so ours must win; weak, so that a program linking
// two Loom libraries gets one copy.
#include <stdint.h>
#include <string.h>

#include "loom_runtime_internal.h"

LOOM_RUNTIME_EXPORT float loom_half_to_float(uint16_t h) {
    uint32_t sign = (h & 0x8000u) << 16;
    uint32_t exp = (h >> 10) & 0x1fu;
    uint32_t mant = h & 0x3ffu;
    uint32_t x;
    if (exp == 0) {
        if (mant == 0) {
            x = sign;
        } else {  // subnormal: renormalize
            int e = -1;
            do {
                e++;
                mant <<= 1;
            } while ((mant & 0x400u) == 0);
            x = sign | (static_cast<uint32_t>(127 - 15 - e) << 23) | ((mant & 0x3ffu) << 13);
        }
    } else if (exp == 31) {
        x = sign | 0x7f800000u | (mant << 13);
    } else {
        x = sign | ((exp - 15 + 127) << 23) | (mant << 13);
    }
    float f;
    memcpy(&f, &x, 4);
    return f;
}

// Round to nearest even, like F16C's vcvtps2ph with imm 4 (current rounding mode).
LOOM_RUNTIME_EXPORT uint16_t loom_float_to_half(float f) {
    uint32_t x;
    memcpy(&x, &f, 4);
    uint32_t sign = (x >> 16) & 0x8000u;
    int32_t exp = static_cast<int32_t>((x >> 23) & 0xff) - 127 + 15;
    uint32_t mant = x & 0x7fffffu;
    if (((x >> 23) & 0xff) == 0xff) {  // inf or nan (quiet it)
        return static_cast<uint16_t>(sign | 0x7c00u | (mant ? (0x200u | (mant >> 13)) : 0u));
    }
    if (exp >= 31) return static_cast<uint16_t>(sign | 0x7c00u);
    if (exp <= 0) {
        if (exp < -10) return static_cast<uint16_t>(sign);
        mant |= 0x800000u;
        uint32_t shift = static_cast<uint32_t>(14 - exp);
        uint32_t half = mant >> shift;
        uint32_t rem = mant & ((1u << shift) - 1);
        uint32_t halfway = 1u << (shift - 1);
        if (rem > halfway || (rem == halfway && (half & 1u))) half++;
        return static_cast<uint16_t>(sign | half);
    }
    uint32_t half = sign | (static_cast<uint32_t>(exp) << 10) | (mant >> 13);
    uint32_t rem = mant & 0x1fffu;
    if (rem > 0x1000u || (rem == 0x1000u && (half & 1u))) half++;  // a carry into exp is right
    return static_cast<uint16_t>(half);
}

// Via float: double rounding, but Loom itself never asks for it (codegen
// converts float64 to float16 through float32, like loom::float16_t(double)).
LOOM_RUNTIME_EXPORT uint16_t loom_double_to_half(double d) {
    return loom_float_to_half(static_cast<float>(d));
}

#ifdef LOOM_RUNTIME_AOT
extern "C" {
float __gnu_h2f_ieee(uint16_t h) __attribute__((weak, alias("loom_half_to_float")));
uint16_t __gnu_f2h_ieee(float f) __attribute__((weak, alias("loom_float_to_half")));
uint16_t __truncdfhf2(double d) __attribute__((weak, alias("loom_double_to_half")));
}
#endif
