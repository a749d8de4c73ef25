#include "loom/Type.h"

#include "loom/runtime/loom_runtime.h"

#include <cmath>
#include <limits>

namespace loom {

// One implementation of the conversions, shared with compiled code.
float16_t::float16_t(float f) : bits(loom_float_to_half(f)) {}
float16_t::operator float() const { return loom_half_to_float(bits); }

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
