// Scalar and vector element types of Loom expressions and buffers.
#pragma once

#include <cstdint>
#include <cstring>
#include <string>
#include <type_traits>

namespace loom {

/** IEEE half precision, stored as raw bits. Converts to and from float. */
struct float16_t {
    uint16_t bits = 0;
    float16_t() = default;
    explicit float16_t(float f);
    explicit float16_t(double d) : float16_t(static_cast<float>(d)) {}
    explicit operator float() const;
    static float16_t from_bits(uint16_t b) {
        float16_t h;
        h.bits = b;
        return h;
    }
};

/** bfloat16: the top 16 bits of a float32, rounded to nearest even. */
struct bfloat16_t {
    uint16_t bits = 0;
    bfloat16_t() = default;
    explicit bfloat16_t(float f);
    explicit bfloat16_t(double d) : bfloat16_t(static_cast<float>(d)) {}
    explicit operator float() const;
    static bfloat16_t from_bits(uint16_t b) {
        bfloat16_t h;
        h.bits = b;
        return h;
    }
};

/** The type of an expression: a code (signed int, unsigned int, float,
 * bfloat, opaque handle), a bit width and a number of vector lanes.
 * bool is UInt(1). */
struct Type {
    // The values are the C ABI's loom_type_code_t and DLPack's type codes.
    enum Code : uint8_t { Int = 0, UInt = 1, Float = 2, Handle = 3, BFloat = 4 };

    Code code = Int;
    uint8_t bits = 32;
    uint16_t lanes = 1;

    constexpr Type() = default;
    constexpr Type(Code c, int b, int l = 1)
        : code(c), bits(static_cast<uint8_t>(b)), lanes(static_cast<uint16_t>(l)) {}

    bool is_int() const { return code == Int; }
    bool is_uint() const { return code == UInt; }
    bool is_bool() const { return code == UInt && bits == 1; }
    bool is_float() const { return code == Float || code == BFloat; }
    bool is_bfloat() const { return code == BFloat; }
    bool is_handle() const { return code == Handle; }
    bool is_int_or_uint() const { return code == Int || code == UInt; }
    bool is_scalar() const { return lanes == 1; }
    bool is_vector() const { return lanes > 1; }
    int bytes() const { return (bits + 7) / 8; }

    Type with_lanes(int l) const { return Type(code, bits, l); }
    Type with_bits(int b) const { return Type(code, b, lanes); }
    Type with_code(Code c) const { return Type(c, bits, lanes); }
    Type element_of() const { return with_lanes(1); }

    bool operator==(const Type &o) const {
        return code == o.code && bits == o.bits && lanes == o.lanes;
    }
    bool operator!=(const Type &o) const { return !(*this == o); }

    /** Whether every value of this (integer) type fits in `other`. */
    bool can_represent(Type other) const;
    /** Whether the integer constant `v` fits in this type. */
    bool can_represent(int64_t v) const;
    bool can_represent(uint64_t v) const;
    bool can_represent(double v) const;

    int64_t min_int() const;
    int64_t max_int() const;
    uint64_t max_uint() const;
};

inline Type Int(int bits, int lanes = 1) { return Type(Type::Int, bits, lanes); }
inline Type UInt(int bits, int lanes = 1) { return Type(Type::UInt, bits, lanes); }
inline Type Float(int bits, int lanes = 1) { return Type(Type::Float, bits, lanes); }
inline Type BFloat(int bits = 16, int lanes = 1) { return Type(Type::BFloat, bits, lanes); }
inline Type Bool(int lanes = 1) { return UInt(1, lanes); }
inline Type Handle(int lanes = 1) { return Type(Type::Handle, 64, lanes); }

/** The Loom type of a C++ scalar type. */
template <typename T> Type type_of() {
    if constexpr (std::is_same_v<T, bool>) return Bool();
    else if constexpr (std::is_same_v<T, float16_t>) return Float(16);
    else if constexpr (std::is_same_v<T, bfloat16_t>) return BFloat(16);
    else if constexpr (std::is_floating_point_v<T>) return Float(8 * sizeof(T));
    else if constexpr (std::is_integral_v<T> && std::is_signed_v<T>) return Int(8 * sizeof(T));
    else if constexpr (std::is_integral_v<T>) return UInt(8 * sizeof(T));
    else if constexpr (std::is_pointer_v<T>) return Handle();
    else static_assert(sizeof(T) == 0, "type_of<T>: T is not a Loom scalar type");
}

/** "int32", "float16", "bfloat16", "bool", "float32x8", ... */
std::string type_to_string(Type t);

}  // namespace loom
