// Buffer<T>: an owning or wrapping, strided, n-dimensional array.
#pragma once

#include <cstdint>
#include <functional>
#include <initializer_list>
#include <memory>
#include <string>
#include <vector>

#include "loom/Error.h"
#include "loom/IR.h"
#include "loom/Type.h"
#include "loom/runtime/loom_runtime.h"

namespace loom {
namespace internal {

/** The memory a buffer and all its views share: the host allocation, one
 * GPU allocation, and what each view changed (src/lang/Buffer.cpp). */
struct BufferStorage;

/** The state behind one Buffer (or view): its descriptor, with its own
 * dirty flags, and the storage it shares with the other views. */
struct BufferContents {
    loom_buffer_t raw{};
    std::vector<loom_dimension_t> dims;
    std::shared_ptr<BufferStorage> storage;
    std::string name;
    /** Hands what the view changed on one side and not the other to the
     * storage, for the next view used to copy. */
    ~BufferContents();
    BufferContents() = default;
    BufferContents(const BufferContents &) = delete;
    BufferContents &operator=(const BufferContents &) = delete;
};

}  // namespace internal

/** A type-erased buffer. Index order is NumPy's: the last index is the
 * innermost (contiguous) one. */
class RawBuffer {
  public:
    RawBuffer() = default;
    /** Allocates a dense, zero-initialized buffer of the given shape. */
    RawBuffer(Type t, const std::vector<int> &shape, const std::string &name = "");
    /** Wraps external memory; strides in elements (default: dense). */
    static RawBuffer wrap(Type t, void *host, const std::vector<int> &shape,
                          const std::vector<int> &strides = {}, const std::string &name = "");

    bool defined() const { return contents != nullptr; }
    Type type() const;
    int dimensions() const;
    int dim_min(int d) const;
    int extent(int d) const;
    int stride(int d) const;
    std::vector<int> shape() const;
    int64_t number_of_elements() const;
    const std::string &name() const;
    /** The host memory, holding the newest data: if a GPU pipeline wrote
     * the buffer since, its data is copied back first. The buffer is then
     * taken to be changed on the host (the next GPU pipeline copies it to
     * the GPU again). Null for a buffer of GPU memory alone. */
    uint8_t *host() const;
    /** The descriptor compiled pipelines take, after the changes of the
     * buffer's other views are settled (see below). An AOT GPU pipeline
     * given a view gives it GPU memory of its own; call copy_to_device()
     * on the view first so that it shares the buffer's. */
    loom_buffer_t *raw_buffer() const;

    // ---- GPU memory. A buffer gets it when a GPU pipeline first uses it,
    // and keeps it (freed with its last view); the dirty flags say which
    // copy is newer, and host access (host(), operator(), data()) copies
    // back. A buffer and its views (cropped, transposed) share one GPU
    // allocation, and each keeps flags for its own elements: before a view
    // is used (host access, a pipeline, raw_buffer()), what the others
    // changed on the GPU is copied to the host, and, for a pipeline, what
    // they changed on the host is copied to the GPU, so every view sees
    // every other view's writes. Only the changed views' elements are
    // copied. The queries below settle the other views first too.
    bool has_device_memory() const;
    bool host_dirty() const;
    bool device_dirty() const;
    /** Copies the GPU's data to the host if it is newer. */
    void copy_to_host() const;
    /** Gives the buffer GPU memory, with the host's data if that is newer.
     * For a view, the memory is for all the elements of the buffer it was
     * taken from, shared with its other views. */
    void copy_to_device() const;
    /** Copies newer GPU data back, then frees the GPU memory (of the
     * buffer and all its views). */
    void device_free() const;
    /** A buffer of GPU memory alone at address `device` (e.g. a PyTorch
     * tensor's data_ptr()), owned by the caller; strides in elements
     * (default: dense). Only GPU kernels can use it. */
    static RawBuffer wrap_device(Type t, uint64_t device, const std::vector<int> &shape,
                                 const std::vector<int> &strides = {},
                                 const std::string &name = "");

    /** A view of the same memory restricted to [min, min+extent) in dim d.
     * Coordinates are kept: the view's dim d has min `min`. */
    RawBuffer cropped(int d, int min, int extent) const;
    /** A view with dimensions permuted: new dim i is old dim order[i]. */
    RawBuffer transposed(const std::vector<int> &order) const;
    /** Sets the coordinate of the first element in each dimension. */
    void set_min(const std::vector<int> &mins);

    /** Address of the element at the given coordinates (no bounds check). */
    uint8_t *address_of(const std::vector<int> &coords) const;

    internal::BufferPtr contents;
};

namespace internal {
/** For a GPU pipeline about to run on `b`: gives b's storage GPU memory for
 * all its elements if b is a view of part of it, so that the views share
 * one allocation (the runtime would give the view memory of its own). */
void share_gpu_memory_of_views(const RawBuffer &b);
}  // namespace internal

// Buffer<> (T = void) is never instantiated: it only names "a buffer whose
// element type is chosen elsewhere", as in a generator's Input<Buffer<>>.
template <typename T = void> class Buffer : public RawBuffer {
  public:
    Buffer() = default;
    explicit Buffer(const std::vector<int> &shape, const std::string &name = "")
        : RawBuffer(type_of<T>(), shape, name) {}
    Buffer(std::initializer_list<int> shape, const std::string &name = "")
        : RawBuffer(type_of<T>(), std::vector<int>(shape), name) {}
    /** Adopts a RawBuffer of element type T. */
    explicit Buffer(const RawBuffer &b) : RawBuffer(b) {
        if (b.defined() && b.type() != type_of<T>()) {
            throw RuntimeError("Buffer<" + type_to_string(type_of<T>()) +
                               "> cannot hold a buffer of " + type_to_string(b.type()));
        }
    }
    static Buffer wrap(T *host, const std::vector<int> &shape, const std::vector<int> &strides = {},
                       const std::string &name = "") {
        return Buffer(RawBuffer::wrap(type_of<T>(), host, shape, strides, name));
    }

    T *data() const { return reinterpret_cast<T *>(host()); }

    template <typename... Args> T &operator()(Args... coords) const {
        return *reinterpret_cast<T *>(address_of({static_cast<int>(coords)...}));
    }
    T &at(const std::vector<int> &coords) const {
        return *reinterpret_cast<T *>(address_of(coords));
    }

    /** Calls f(coords) for every element, last index innermost. */
    void for_each_index(const std::function<void(const std::vector<int> &)> &f) const {
        int n = dimensions();
        std::vector<int> c(n);
        for (int d = 0; d < n; d++) {
            if (extent(d) <= 0) return;
            c[d] = dim_min(d);
        }
        while (true) {
            f(c);
            int d = n - 1;
            while (d >= 0) {
                if (++c[d] < dim_min(d) + extent(d)) break;
                c[d] = dim_min(d);
                d--;
            }
            if (d < 0) return;
        }
    }
    /** Sets every element to f(coords). */
    void fill(const std::function<T(const std::vector<int> &)> &f) {
        for_each_index([&](const std::vector<int> &c) { at(c) = f(c); });
    }
};

}  // namespace loom
