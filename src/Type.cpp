#include "loom/Type.h"

#include <cmath>
#include <limits>

namespace loom {

namespace {

// Round-to-nearest-even conversions between float32 and the 16-bit formats.
uint16_t float_to_half_bits(float f) {
    uint32_t x;
    std::memcpy(&x, &f, 4);
    uint32_t sign = (x >> 16) & 0x8000u;
    int32_t exp = static_cast<int32_t>((x >> 23) & 0xff) - 127 + 15;
    uint32_t mant = x & 0x7fffffu;
    if (((x >> 23) & 0xff) == 0xff) {  // inf or nan
        return static_cast<uint16_t>(sign | 0x7c00u | (mant ? 0x200u : 0u));
    }
    if (exp >= 31) return static_cast<uint16_t>(sign | 0x7c00u);  // overflow to inf
    if (exp <= 0) {
        if (exp < -10) return static_cast<uint16_t>(sign);  // underflow to zero
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
    if (rem > 0x1000u || (rem == 0x1000u && (half & 1u))) half++;  // may carry into exp: ok
    return static_cast<uint16_t>(half);
}

float half_bits_to_float(uint16_t h) {
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
    std::memcpy(&f, &x, 4);
    return f;
}

}  // namespace

float16_t::float16_t(float f) : bits(float_to_half_bits(f)) {}
float16_t::operator float() const { return half_bits_to_float(bits); }

bfloat16_t::bfloat16_t(float f) {
    uint32_t x;
    std::memcpy(&x, &f, 4);
    if (std::isnan(f)) {
        bits = static_cast<uint16_t>((x >> 16) | 0x40u);
    } else {
        uint32_t rounding = 0x7fffu + ((x >> 16) & 1u);
        bits = static_cast<uint16_t>((x + rounding) >> 16);
    }
}
bfloat16_t::operator float() const {
    uint32_t x = static_cast<uint32_t>(bits) << 16;
    float f;
    std::memcpy(&f, &x, 4);
    return f;
}

int64_t Type::min_int() const {
    if (code == UInt) return 0;
    return bits >= 64 ? std::numeric_limits<int64_t>::min() : -(int64_t(1) << (bits - 1));
}
int64_t Type::max_int() const {
    if (code == UInt && bits >= 64) return std::numeric_limits<int64_t>::max();
    if (code == UInt) return static_cast<int64_t>((uint64_t(1) << bits) - 1);
    return bits >= 64 ? std::numeric_limits<int64_t>::max() : (int64_t(1) << (bits - 1)) - 1;
}
uint64_t Type::max_uint() const {
    return bits >= 64 ? std::numeric_limits<uint64_t>::max() : (uint64_t(1) << bits) - 1;
}

bool Type::can_represent(Type other) const {
    if (lanes != other.lanes) return false;
    if (*this == other) return true;
    switch (code) {
    case Int:
        return (other.is_int() && other.bits <= bits) || (other.is_uint() && other.bits < bits);
    case UInt: return other.is_uint() && other.bits <= bits;
    case Float:
        return (other.code == Float && other.bits <= bits) || (other.is_bfloat() && bits >= 32) ||
               (other.is_int_or_uint() && other.bits < (bits == 16   ? 11
                                                        : bits == 32 ? 24
                                                                     : 53));
    case BFloat: return other.is_bfloat() || (other.is_int_or_uint() && other.bits < 8);
    case Handle: return other.is_handle();
    }
    return false;
}

bool Type::can_represent(int64_t v) const {
    if (is_int()) return v >= min_int() && v <= max_int();
    if (is_uint()) return v >= 0 && static_cast<uint64_t>(v) <= max_uint();
    if (is_float()) return static_cast<int64_t>(static_cast<double>(v)) == v;
    return false;
}
bool Type::can_represent(uint64_t v) const {
    if (is_int()) return v <= static_cast<uint64_t>(max_int());
    if (is_uint()) return v <= max_uint();
    if (is_float()) return static_cast<uint64_t>(static_cast<double>(v)) == v;
    return false;
}
bool Type::can_represent(double v) const {
    if (is_int_or_uint()) {
        return std::floor(v) == v && v >= static_cast<double>(min_int()) &&
               v <= static_cast<double>(is_uint() ? max_uint() : static_cast<uint64_t>(max_int()));
    }
    if (code == Float && bits == 64) return true;
    if (code == Float && bits == 32)
        return std::isnan(v) || static_cast<double>(static_cast<float>(v)) == v;
    if (code == Float && bits == 16)
        return std::isnan(v) || static_cast<double>(static_cast<float>(float16_t(v))) == v;
    if (code == BFloat)
        return std::isnan(v) || static_cast<double>(static_cast<float>(bfloat16_t(v))) == v;
    return false;
}

std::string type_to_string(Type t) {
    std::string s;
    if (t.is_bool()) {
        s = "bool";
    } else {
        switch (t.code) {
        case Type::Int: s = "int"; break;
        case Type::UInt: s = "uint"; break;
        case Type::Float: s = "float"; break;
        case Type::BFloat: s = "bfloat"; break;
        case Type::Handle: s = "handle"; break;
        }
        if (t.code != Type::Handle) s += std::to_string(t.bits);
    }
    if (t.lanes > 1) s += "x" + std::to_string(t.lanes);
    return s;
}

}  // namespace loom
