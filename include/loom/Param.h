// Pipeline inputs: scalar Param<T> and buffer BufferParam, bound to values at
// call time.
#pragma once

#include <atomic>
#include <cstring>
#include <map>
#include <memory>
#include <string>
#include <type_traits>
#include <vector>

#include "loom/Buffer.h"
#include "loom/IROperator.h"

namespace loom {
namespace internal {

/** Parameters are numbered as they are created; a pipeline's arguments come in
 * that order. Defined in libloom, so that every library creating Params
 * (the Python extension, say) draws from the one counter. */
uint64_t next_parameter_serial();

struct ParameterContents {
    uint64_t serial = next_parameter_serial();
    std::string name;
    Type type;
    bool is_buffer = false;
    int dimensions = 0;
    // Buffers: whether the innermost dimension is assumed contiguous. The
    // compiled code checks it and relies on it for dense vector accesses.
    bool innermost_stride_one = true;
    // A scalar's current value (for JIT calls that do not pass it explicitly).
    uint64_t scalar_bits = 0;
    bool scalar_set = false;
    // A buffer's bound value, if any.
    RawBuffer buffer;
    // Buffers: extents and mins fixed at compile time (Dimension::set_extent,
    // set_min), by dimension.
    std::map<int, int> fixed_extents, fixed_mins;
    // Buffers: promises code generation relies on, checked at run time.
    // Strides that are multiples of these (Dimension::set_stride_multiple),
    // by dimension, and the alignment in bytes of the element at the mins
    // (set_host_alignment; 0: none promised).
    std::map<int, int> stride_multiples;
    int host_alignment = 0;
    // The constraints of a pipeline's output buffer (Func::output_buffer)
    // rather than an input: it holds no value and is not an argument of its
    // own.
    bool is_output = false;
};

std::string unique_name(const std::string &prefix);

}  // namespace internal

/** A scalar input of type T. */
template <typename T> class Param {
  public:
    explicit Param(const std::string &name = "") {
        param = std::make_shared<internal::ParameterContents>();
        param->name = name.empty() ? internal::unique_name("p") : name;
        param->type = type_of<T>();
    }
    Param(const std::string &name, T value) : Param(name) { set(value); }
    void set(T value) {
        static_assert(sizeof(T) <= 8, "Param values are at most 8 bytes");
        param->scalar_bits = 0;
        std::memcpy(&param->scalar_bits, &value, sizeof(T));
        param->scalar_set = true;
    }
    const std::string &name() const { return param->name; }
    Type type() const { return param->type; }
    operator Expr() const { return internal::Variable::make(param->type, param->name, param); }
    internal::ParameterPtr param;
};

/** The extent, min or stride of one dimension of a BufferParam, as Exprs. */
class Dimension {
  public:
    Dimension(internal::ParameterPtr p, int d) : param(std::move(p)), dim(d) {}
    Expr min() const;
    Expr extent() const;
    Expr max() const;
    Expr stride() const;
    /** Fixes this dimension's extent at compile time: the pipeline is
     * compiled with the constant in place of extent() (loops over it get a
     * constant trip count, storage sized by it a constant size, as a GPU
     * kernel's per-thread arrays need), and checks at run time that the
     * buffer passed has exactly this extent. */
    Dimension &set_extent(int extent);
    /** Fixes this dimension's min at compile time, as set_extent does its
     * extent (checked at run time). With the mins of the buffers a vector
     * access spans known, the compiler can prove where its words fall. */
    Dimension &set_min(int min);
    /** Promises that this dimension's stride (in elements) is a multiple of
     * `multiple`, as it is for rows padded or sized to whole vectors. The
     * pipeline checks it at run time. With set_host_alignment, it lets the
     * compiler prove that each row's vectors start on aligned words. */
    Dimension &set_stride_multiple(int multiple);

  private:
    std::string describe(const char *directive, int value) const;
    internal::ParameterPtr param;
    int dim;
};

/** An input (or output) buffer whose element type and rank are fixed and whose
 * sizes and strides are known only at run time. */
class BufferParam {
  public:
    BufferParam(Type t, int dimensions, const std::string &name = "");
    const std::string &name() const { return param->name; }
    Type type() const { return param->type; }
    int dimensions() const { return param->dimensions; }
    Dimension dim(int d) const;
    /** By default Loom assumes (and checks at run time) that the innermost
     * dimension is contiguous, so vector loads are dense. Call this to accept
     * any stride there, e.g. transposed views, at some cost in speed. */
    BufferParam &allow_strided_innermost() {
        param->innermost_stride_one = false;
        return *this;
    }
    /** Promises that the buffer's element at its mins (the start of its
     * data) has an address that is a multiple of `bytes` (a power of two),
     * on the host and on the GPU, as allocations from Loom, PyTorch or
     * cudaMalloc are for 16 or more. The pipeline checks it at run time
     * (a view cropped at an odd offset fails it). Vector loads the compiler
     * then proves aligned move whole words, with no test of the address and
     * no lane-by-lane fallback. */
    BufferParam &set_host_alignment(int bytes);
    /** Binds a buffer for JIT calls that do not pass one explicitly. */
    void set(const RawBuffer &b);
    const RawBuffer &get() const { return param->buffer; }

    Expr operator()(const std::vector<Expr> &args) const;
    template <typename... Args,
              typename = std::enable_if_t<(std::is_convertible_v<Args &&, Expr> && ...)>>
    Expr operator()(Args &&...args) const {
        return (*this)(std::vector<Expr>{Expr(args)...});
    }

    internal::ParameterPtr param;
};

}  // namespace loom
