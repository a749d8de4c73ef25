#include "loom/Buffer.h"

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <mutex>

#include "ir/Util.h"

namespace loom {

using namespace internal;

namespace {

constexpr int64_t kMaxIndex = std::numeric_limits<int32_t>::max();

const std::string &empty_string() {
    static const std::string s;
    return s;
}

// Bytes per element. Vector element types are stored lane after lane.
int64_t element_bytes(Type t) { return static_cast<int64_t>(t.bytes()) * t.lanes; }

// Buffers with more dims than fit in the descriptor would confuse every
// consumer; 32 is far beyond any real tensor.
constexpr int kMaxDims = 32;

std::string buffer_label(const std::string &name) {
    return "Buffer " + (name.empty() ? std::string("<unnamed>") : name);
}

constexpr uint64_t kDirty = loom_buffer_host_dirty | loom_buffer_device_dirty;

}  // namespace

namespace internal {

// A view's descriptor with dirty flags, kept after the view is gone.
struct Orphan {
    std::vector<loom_dimension_t> dims;
    loom_buffer_t raw{};
    std::string name;
};

struct BufferStorage {
    std::shared_ptr<uint8_t> allocation;  // null when wrapping external memory
    /** The elements of the buffer the views were taken from, whose GPU
     * memory (`whole.device`, owned by the storage) every view shares. Its
     * host_dirty flag marks GPU memory allocated but not yet written. */
    std::vector<loom_dimension_t> whole_dims;
    loom_buffer_t whole{};
    std::string name;
    std::vector<BufferContents *> views;
    std::vector<std::unique_ptr<Orphan>> orphans;
    /** Guards the above: views may be taken and dropped on any thread. */
    std::mutex mutex;
    /** Whether a view was ever taken; until then there is nothing to
     * settle, and host access stays as cheap as it was. */
    std::atomic<bool> shared{false};
    ~BufferStorage() {
        if (whole.flags & loom_buffer_device_owned) loom_device_free(&whole);
    }
};

}  // namespace internal

namespace {

/** Throws the runtime's last error message, naming the buffer. */
void check_device_call(int32_t err, const std::string &name, const char *what) {
    if (err != 0) {
        runtime_error_report << buffer_label(name) << ": " << what
                             << " failed: " << loom_last_error_message();
    }
}

/** The first and one-past-last byte a descriptor's elements occupy; equal
 * when it has none. */
std::pair<const uint8_t *, const uint8_t *> byte_span(const loom_buffer_t &b) {
    int64_t lo = 0, hi = 0;
    for (int d = 0; d < b.dimensions; d++) {
        if (b.dim[d].extent <= 0) return {b.host, b.host};
        int64_t reach = static_cast<int64_t>(b.dim[d].extent - 1) * b.dim[d].stride;
        (reach < 0 ? lo : hi) += reach;
    }
    const int64_t elem = (b.type.bits + 7) / 8 * std::max<int64_t>(b.type.lanes, 1);
    return {b.host + lo * elem, b.host + (hi + 1) * elem};
}

/** Where a view's elements are in the storage's GPU memory (0: none yet). */
uint64_t shared_device_address(const BufferStorage &s, const loom_buffer_t &view) {
    if (!s.whole.device) return 0;
    return s.whole.device + static_cast<uint64_t>(view.host - s.whole.host);
}

/** A view handed to the runtime without GPU memory may have been given
 * memory of its own. The storage adopts it when it spans all the
 * storage's elements (the buffer itself, say); otherwise the view's GPU
 * changes are copied back and the memory freed, so that the views share
 * one allocation. Returns a runtime error code. */
int32_t settle_own_memory(BufferStorage &s, loom_buffer_t &view) {
    if (!view.device || !(view.flags & loom_buffer_device_owned)) return 0;
    if (!s.whole.device && byte_span(view) == byte_span(s.whole)) {
        s.whole.device = view.device - static_cast<uint64_t>(view.host - s.whole.host);
        s.whole.flags |= loom_buffer_device_owned;
        view.flags &= ~static_cast<uint64_t>(loom_buffer_device_owned);
        return 0;
    }
    int32_t err = loom_copy_to_host(&view);
    if (!err) err = loom_device_free(&view);
    if (err) return err;
    // The host now holds the view's data; the shared copy may not.
    view.device = shared_device_address(s, view);
    if (view.device) view.flags |= loom_buffer_host_dirty;
    return 0;
}

enum class Use {
    Host,     // the caller reads or writes the host's elements
    Anywhere  // a pipeline or the caller's own code may use either copy
};

/** Makes the other views' changes visible to view `c`: copies back what
 * they changed on the GPU, and, unless c is used on the host only, copies
 * to the GPU what they changed on the host. c's own flags are left for
 * c's user (a pipeline, host()) to act on. Views of GPU memory alone share
 * it and have nothing to settle. */
void settle_views(BufferContents &c, Use use) {
    BufferStorage &s = *c.storage;
    if (!c.raw.host || !s.shared.load(std::memory_order_acquire)) return;
    std::lock_guard<std::mutex> lock(s.mutex);
    for (BufferContents *v : s.views) {
        check_device_call(settle_own_memory(s, v->raw), v->name, "settling GPU memory");
    }
    for (BufferContents *v : s.views) {
        uint64_t shared = shared_device_address(s, v->raw);
        if (!(v->raw.flags & loom_buffer_device_owned) && v->raw.device != shared) {
            v->raw.device = shared;
        }
    }
    std::vector<std::pair<loom_buffer_t *, const std::string *>> others;
    others.emplace_back(&s.whole, &s.name);
    for (BufferContents *v : s.views) {
        if (v != &c) others.emplace_back(&v->raw, &v->name);
    }
    for (auto &o : s.orphans) others.emplace_back(&o->raw, &o->name);
    // Changes on the host first, so that a GPU change copied back after
    // them is not overwritten; each copy moves its view's elements alone.
    if (use == Use::Anywhere) {
        for (auto &[raw, name] : others) {
            if (!(raw->flags & loom_buffer_host_dirty)) continue;
            if (raw->device) {
                check_device_call(loom_copy_to_device(raw), *name, "copy_to_device");
            } else {
                raw->flags &= ~static_cast<uint64_t>(loom_buffer_host_dirty);
            }
        }
    }
    for (auto &[raw, name] : others) {
        if (raw->flags & loom_buffer_device_dirty) {
            check_device_call(loom_copy_to_host(raw), *name, "copy_to_host");
        }
    }
    s.orphans.erase(
        std::remove_if(s.orphans.begin(), s.orphans.end(),
                       [](const std::unique_ptr<Orphan> &o) { return !(o->raw.flags & kDirty); }),
        s.orphans.end());
}

/** Settles the other views, then copies c's GPU data back if it is newer. */
void make_host_current(BufferContents &c) {
    settle_views(c, Use::Host);
    if (c.raw.device && c.raw.host) {
        check_device_call(loom_copy_to_host(&c.raw), c.name, "copy_to_host");
    }
}

/** Registers a new view (or buffer) of `storage`, with descriptor `raw`
 * (pointing at `dims`). */
BufferPtr new_view(std::shared_ptr<BufferStorage> storage, const loom_buffer_t &raw,
                   std::vector<loom_dimension_t> dims, const std::string &name) {
    auto n = std::make_shared<BufferContents>();
    n->dims = std::move(dims);
    n->raw = raw;
    n->raw.dim = n->dims.empty() ? nullptr : n->dims.data();
    n->name = name;
    n->storage = std::move(storage);
    std::lock_guard<std::mutex> lock(n->storage->mutex);
    n->storage->views.push_back(n.get());
    return n;
}

/** A view of c's memory: the same descriptor with no dirty flags (its
 * elements are c's, and c keeps c's flags) and the shared GPU memory. */
BufferPtr view_of(const BufferContents &c) {
    loom_buffer_t raw = c.raw;
    c.storage->shared.store(true, std::memory_order_release);
    if (raw.host) {
        raw.flags = 0;
        std::lock_guard<std::mutex> lock(c.storage->mutex);
        raw.device = shared_device_address(*c.storage, raw);
    } else {
        raw.flags &= ~static_cast<uint64_t>(loom_buffer_device_owned);
    }
    return new_view(c.storage, raw, c.dims, c.name);
}

/** A new buffer of its own storage, over `host` (null: GPU memory alone). */
BufferPtr new_buffer(Type t, uint8_t *host, std::shared_ptr<uint8_t> allocation,
                     std::vector<loom_dimension_t> dims, const std::string &name) {
    auto s = std::make_shared<BufferStorage>();
    s->allocation = std::move(allocation);
    s->name = name;
    loom_buffer_t raw{};
    raw.host = host;
    raw.type.code = static_cast<uint8_t>(t.code);
    raw.type.bits = t.bits;
    raw.type.lanes = t.lanes;
    raw.dimensions = static_cast<int32_t>(dims.size());
    s->whole_dims = dims;
    s->whole = raw;
    s->whole.dim = s->whole_dims.empty() ? nullptr : s->whole_dims.data();
    return new_view(std::move(s), raw, std::move(dims), name);
}

// Dense strides in NumPy order: the last dimension is contiguous.
std::vector<int64_t> dense_strides(const std::string &name, const std::vector<int> &shape) {
    std::vector<int64_t> strides(shape.size());
    int64_t s = 1;
    for (int d = static_cast<int>(shape.size()) - 1; d >= 0; d--) {
        strides[d] = s;
        // Multiply by at least 1 so that an empty dimension still leaves
        // distinct, valid strides for the others.
        s *= std::max(shape[d], 1);
        if (s > kMaxIndex) {
            runtime_error_report << buffer_label(name) << ": shape " << vector_to_string(shape)
                                 << " has more elements than 32-bit indexing allows (" << kMaxIndex
                                 << "). Split it into smaller buffers.";
        }
    }
    return strides;
}

void check_shape(const std::string &name, const std::vector<int> &shape) {
    if (shape.size() > static_cast<size_t>(kMaxDims)) {
        runtime_error_report << buffer_label(name) << " has " << shape.size()
                             << " dimensions; at most " << kMaxDims << " are supported.";
    }
    for (size_t d = 0; d < shape.size(); d++) {
        if (shape[d] < 0) {
            runtime_error_report << buffer_label(name) << ": extent " << shape[d]
                                 << " of dimension " << d << " is negative (shape "
                                 << vector_to_string(shape) << ").";
        }
    }
}

}  // namespace

RawBuffer::RawBuffer(Type t, const std::vector<int> &shape, const std::string &name) {
    std::string n = name.empty() ? unique_name("buffer") : name;
    check_shape(n, shape);
    std::vector<int64_t> strides = dense_strides(n, shape);
    int64_t elems = 1;
    for (int e : shape) elems *= e;
    int64_t bytes = elems * element_bytes(t);

    std::vector<loom_dimension_t> dims;
    for (size_t d = 0; d < shape.size(); d++) {
        loom_dimension_t dim{};
        dim.min = 0;
        dim.extent = shape[d];
        dim.stride = static_cast<int32_t>(strides[d]);
        dims.push_back(dim);
    }
    // 64-byte alignment suits every vector width the CPU backend emits.
    size_t alloc = static_cast<size_t>((std::max<int64_t>(bytes, 1) + 63) / 64 * 64);
    void *mem = std::aligned_alloc(64, alloc);
    if (!mem) {
        runtime_error_report << buffer_label(n) << ": out of memory allocating " << alloc
                             << " bytes.";
    }
    std::memset(mem, 0, alloc);
    contents = new_buffer(t, static_cast<uint8_t *>(mem),
                          std::shared_ptr<uint8_t>(static_cast<uint8_t *>(mem), std::free),
                          std::move(dims), n);
}

RawBuffer RawBuffer::wrap(Type t, void *host, const std::vector<int> &shape,
                          const std::vector<int> &strides, const std::string &name) {
    std::string n = name.empty() ? unique_name("buffer") : name;
    check_shape(n, shape);
    std::vector<int64_t> s;
    if (strides.empty()) {
        s = dense_strides(n, shape);
    } else {
        if (strides.size() != shape.size()) {
            runtime_error_report << buffer_label(n) << ": " << strides.size()
                                 << " strides given for a shape of " << shape.size()
                                 << " dimensions.";
        }
        s.assign(strides.begin(), strides.end());
    }
    // Every element must be addressable with a 32-bit offset, which is what
    // compiled code computes.
    int64_t lo = 0, hi = 0, elems = 1;
    for (size_t d = 0; d < shape.size(); d++) {
        elems *= shape[d];
        if (shape[d] == 0) continue;
        int64_t span = static_cast<int64_t>(shape[d] - 1) * s[d];
        if (span > 0) hi += span;
        else lo += span;
        if (hi > kMaxIndex || -lo > kMaxIndex) {
            runtime_error_report << buffer_label(n) << ": shape " << vector_to_string(shape)
                                 << " with strides " << vector_to_string(s)
                                 << " spans more elements than 32-bit indexing allows.";
        }
    }
    if (!host && elems != 0) {
        runtime_error_report << buffer_label(n) << ": wrap() of a null pointer.";
    }
    std::vector<loom_dimension_t> dims;
    for (size_t d = 0; d < shape.size(); d++) {
        loom_dimension_t dim{};
        dim.min = 0;
        dim.extent = shape[d];
        dim.stride = static_cast<int32_t>(s[d]);
        dims.push_back(dim);
    }
    RawBuffer b;
    b.contents = new_buffer(t, static_cast<uint8_t *>(host), nullptr, std::move(dims), n);
    return b;
}

#define LOOM_CHECK_DEFINED(what) \
    if (!contents) runtime_error_report << what << "() of an undefined RawBuffer."

Type RawBuffer::type() const {
    LOOM_CHECK_DEFINED("type");
    const loom_type_t &t = contents->raw.type;
    return Type(static_cast<Type::Code>(t.code), t.bits, t.lanes);
}

int RawBuffer::dimensions() const {
    LOOM_CHECK_DEFINED("dimensions");
    return static_cast<int>(contents->dims.size());
}

namespace {
const loom_dimension_t &get_dim(const BufferPtr &c, int d, const char *what) {
    if (!c) runtime_error_report << what << "() of an undefined RawBuffer.";
    if (d < 0 || d >= static_cast<int>(c->dims.size())) {
        runtime_error_report << buffer_label(c->name) << ": " << what << "(" << d
                             << ") is out of range; the buffer has " << c->dims.size()
                             << " dimensions.";
    }
    return c->dims[d];
}
}  // namespace

int RawBuffer::dim_min(int d) const { return get_dim(contents, d, "dim_min").min; }
int RawBuffer::extent(int d) const { return get_dim(contents, d, "extent").extent; }
int RawBuffer::stride(int d) const { return get_dim(contents, d, "stride").stride; }

std::vector<int> RawBuffer::shape() const {
    LOOM_CHECK_DEFINED("shape");
    std::vector<int> s;
    for (const auto &d : contents->dims) s.push_back(d.extent);
    return s;
}

int64_t RawBuffer::number_of_elements() const {
    LOOM_CHECK_DEFINED("number_of_elements");
    int64_t n = 1;
    for (const auto &d : contents->dims) n *= d.extent;
    return n;
}

const std::string &RawBuffer::name() const { return contents ? contents->name : empty_string(); }

uint8_t *RawBuffer::host() const {
    LOOM_CHECK_DEFINED("host");
    loom_buffer_t &raw = contents->raw;
    make_host_current(*contents);
    // The caller may read (so the GPU's newer data came back) and may write
    // (so the GPU's copy is stale from now on).
    if (raw.device && raw.host) raw.flags |= loom_buffer_host_dirty;
    return raw.host;
}

bool RawBuffer::has_device_memory() const {
    LOOM_CHECK_DEFINED("has_device_memory");
    settle_views(*contents, Use::Host);
    return contents->raw.device != 0;
}

bool RawBuffer::host_dirty() const {
    LOOM_CHECK_DEFINED("host_dirty");
    settle_views(*contents, Use::Host);
    return contents->raw.flags & loom_buffer_host_dirty;
}

bool RawBuffer::device_dirty() const {
    LOOM_CHECK_DEFINED("device_dirty");
    settle_views(*contents, Use::Host);
    return contents->raw.flags & loom_buffer_device_dirty;
}

void RawBuffer::copy_to_host() const {
    LOOM_CHECK_DEFINED("copy_to_host");
    make_host_current(*contents);
}

void RawBuffer::copy_to_device() const {
    LOOM_CHECK_DEFINED("copy_to_device");
    internal::share_gpu_memory_of_views(*this);
    settle_views(*contents, Use::Anywhere);
    check_device_call(loom_copy_to_device(&contents->raw), contents->name, "copy_to_device");
    if (contents->raw.host) {
        check_device_call(settle_own_memory(*contents->storage, contents->raw), contents->name,
                          "copy_to_device");
    }
}

void RawBuffer::device_free() const {
    LOOM_CHECK_DEFINED("device_free");
    BufferContents &c = *contents;
    make_host_current(c);
    if (!c.raw.host) {
        check_device_call(loom_device_free(&c.raw), c.name, "device_free");
        return;
    }
    // Every view's GPU changes are on the host now; the memory goes for all.
    BufferStorage &s = *c.storage;
    std::lock_guard<std::mutex> lock(s.mutex);
    for (BufferContents *v : s.views) {
        check_device_call(loom_device_free(&v->raw), v->name, "device_free");
    }
    check_device_call(loom_device_free(&s.whole), s.name, "device_free");
    s.orphans.clear();
}

RawBuffer RawBuffer::wrap_device(Type t, uint64_t device, const std::vector<int> &shape,
                                 const std::vector<int> &strides, const std::string &name) {
    if (!device) {
        runtime_error_report << buffer_label(name.empty() ? "<unnamed>" : name)
                             << ": wrap_device() of a null GPU address.";
    }
    // Any host pointer passes wrap's checks; the buffer then has none.
    static uint8_t placeholder;
    RawBuffer b = wrap(t, &placeholder, shape, strides, name);
    b.contents->raw.host = nullptr;
    b.contents->raw.device = device;
    b.contents->storage->whole.host = nullptr;
    return b;
}

BufferContents::~BufferContents() {
    if (!storage) return;
    BufferStorage &s = *storage;
    std::lock_guard<std::mutex> lock(s.mutex);
    s.views.erase(std::find(s.views.begin(), s.views.end(), this));
    if (!raw.host) return;
    if (settle_own_memory(s, raw) != 0) {
        // A destructor cannot report the failed copy: the view's GPU
        // changes are lost, and its memory is freed all the same.
        loom_device_free(&raw);
        return;
    }
    if (raw.flags & kDirty) {
        auto o = std::make_unique<Orphan>();
        o->dims = dims;
        o->raw = raw;
        o->raw.dim = o->dims.empty() ? nullptr : o->dims.data();
        o->name = name;
        s.orphans.push_back(std::move(o));
    }
}

loom_buffer_t *RawBuffer::raw_buffer() const {
    LOOM_CHECK_DEFINED("raw_buffer");
    settle_views(*contents, Use::Anywhere);
    return &contents->raw;
}

namespace internal {

void share_gpu_memory_of_views(const RawBuffer &b) {
    BufferContents &c = *b.contents;
    BufferStorage &s = *c.storage;
    std::lock_guard<std::mutex> lock(s.mutex);
    if (!c.raw.host || s.whole.device || byte_span(c.raw) == byte_span(s.whole)) return;
    // Allocated through the whole buffer: its host_dirty flag says that
    // every element is still to be copied.
    check_device_call(loom_device_malloc(&s.whole), s.name, "allocating GPU memory");
}

}  // namespace internal

RawBuffer RawBuffer::cropped(int d, int min, int extent) const {
    const loom_dimension_t &dim = get_dim(contents, d, "cropped");
    if (extent < 0 || min < dim.min ||
        static_cast<int64_t>(min) + extent > static_cast<int64_t>(dim.min) + dim.extent) {
        runtime_error_report << buffer_label(contents->name) << ": cropped(" << d << ", " << min
                             << ", " << extent << ") asks for [" << min << ", "
                             << static_cast<int64_t>(min) + extent << ") in dimension " << d
                             << ", which is not inside the buffer's range [" << dim.min << ", "
                             << static_cast<int64_t>(dim.min) + dim.extent << ").";
    }
    RawBuffer r;
    r.contents = view_of(*contents);
    const int64_t offset =
        (static_cast<int64_t>(min) - dim.min) * dim.stride * element_bytes(type());
    if (r.contents->raw.host) r.contents->raw.host += offset;
    if (r.contents->raw.device) r.contents->raw.device += offset;
    r.contents->dims[d].min = min;
    r.contents->dims[d].extent = extent;
    return r;
}

RawBuffer RawBuffer::transposed(const std::vector<int> &order) const {
    LOOM_CHECK_DEFINED("transposed");
    int n = dimensions();
    std::vector<bool> seen(n, false);
    bool ok = static_cast<int>(order.size()) == n;
    for (int o : order) {
        if (!ok || o < 0 || o >= n || seen[o]) {
            ok = false;
            break;
        }
        seen[o] = true;
    }
    if (!ok) {
        runtime_error_report << buffer_label(contents->name) << ": transposed("
                             << vector_to_string(order) << ") is not a permutation of its " << n
                             << " dimensions.";
    }
    RawBuffer r;
    r.contents = view_of(*contents);
    for (int i = 0; i < n; i++) r.contents->dims[i] = contents->dims[order[i]];
    return r;
}

void RawBuffer::set_min(const std::vector<int> &mins) {
    LOOM_CHECK_DEFINED("set_min");
    if (mins.size() != contents->dims.size()) {
        runtime_error_report << buffer_label(contents->name) << ": set_min with " << mins.size()
                             << " values for a buffer of " << contents->dims.size()
                             << " dimensions.";
    }
    for (size_t d = 0; d < mins.size(); d++) {
        if (static_cast<int64_t>(mins[d]) + contents->dims[d].extent > kMaxIndex + int64_t(1)) {
            runtime_error_report << buffer_label(contents->name) << ": set_min puts dimension " << d
                                 << " beyond the 32-bit coordinate range.";
        }
        contents->dims[d].min = mins[d];
    }
}

uint8_t *RawBuffer::address_of(const std::vector<int> &coords) const {
    LOOM_CHECK_DEFINED("address_of");
    if (coords.size() != contents->dims.size()) {
        runtime_error_report << buffer_label(contents->name) << " has " << contents->dims.size()
                             << " dimensions but is indexed with " << coords.size()
                             << " coordinates.";
    }
    int64_t off = 0;
    for (size_t d = 0; d < coords.size(); d++) {
        off += (static_cast<int64_t>(coords[d]) - contents->dims[d].min) * contents->dims[d].stride;
    }
    uint8_t *base = host();
    if (!base) {
        runtime_error_report << buffer_label(contents->name)
                             << " has GPU memory alone; its elements cannot be read on the host.";
    }
    return base + off * element_bytes(type());
}

#undef LOOM_CHECK_DEFINED

}  // namespace loom
