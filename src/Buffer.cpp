#include "loom/Buffer.h"

#include <cstdlib>
#include <cstring>
#include <limits>

#include "Util.h"

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

/** Throws the runtime's last error message, naming the buffer. */
void check_device_call(int32_t err, const std::string &name, const char *what) {
    if (err != 0) {
        runtime_error_report << buffer_label(name) << ": " << what
                             << " failed: " << loom_last_error_message();
    }
}

/** Copies the GPU's data back if it is newer. */
void make_host_current(BufferContents &c) {
    if (c.raw.device && c.raw.host) {
        check_device_call(loom_copy_to_host(&c.raw), c.name, "copy_to_host");
    }
}

// The loom_buffer_t points into `dims`; after copying BufferContents the
// pointer must follow the copy. A view with host memory starts without GPU
// memory (its parent's data is on the host by then); a view of GPU memory
// alone views the same GPU memory, which its parent owns.
BufferPtr copy_contents(BufferContents &c) {
    make_host_current(c);
    auto n = std::make_shared<BufferContents>(c);
    n->raw.dim = n->dims.empty() ? nullptr : n->dims.data();
    if (n->raw.host) {
        n->raw.device = 0;
        n->raw.flags = 0;
    } else {
        n->raw.flags &= ~static_cast<uint64_t>(loom_buffer_device_owned);
    }
    return n;
}

void init_raw(BufferContents &c, Type t, uint8_t *host) {
    c.raw = loom_buffer_t{};
    c.raw.host = host;
    c.raw.type.code = static_cast<uint8_t>(t.code);
    c.raw.type.bits = t.bits;
    c.raw.type.lanes = t.lanes;
    c.raw.dimensions = static_cast<int32_t>(c.dims.size());
    c.raw.dim = c.dims.empty() ? nullptr : c.dims.data();
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

    contents = std::make_shared<BufferContents>();
    contents->name = n;
    for (size_t d = 0; d < shape.size(); d++) {
        loom_dimension_t dim{};
        dim.min = 0;
        dim.extent = shape[d];
        dim.stride = static_cast<int32_t>(strides[d]);
        contents->dims.push_back(dim);
    }
    // 64-byte alignment suits every vector width the CPU backend emits.
    size_t alloc = static_cast<size_t>((std::max<int64_t>(bytes, 1) + 63) / 64 * 64);
    void *mem = std::aligned_alloc(64, alloc);
    if (!mem) {
        runtime_error_report << buffer_label(n) << ": out of memory allocating " << alloc
                             << " bytes.";
    }
    std::memset(mem, 0, alloc);
    contents->allocation = std::shared_ptr<uint8_t>(static_cast<uint8_t *>(mem), std::free);
    init_raw(*contents, t, static_cast<uint8_t *>(mem));
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
    RawBuffer b;
    b.contents = std::make_shared<BufferContents>();
    b.contents->name = n;
    for (size_t d = 0; d < shape.size(); d++) {
        loom_dimension_t dim{};
        dim.min = 0;
        dim.extent = shape[d];
        dim.stride = static_cast<int32_t>(s[d]);
        b.contents->dims.push_back(dim);
    }
    init_raw(*b.contents, t, static_cast<uint8_t *>(host));
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
    if (raw.device) {
        // The caller may read (so the GPU's newer data comes back) and may
        // write (so the GPU's copy is stale from now on).
        make_host_current(*contents);
        if (raw.host) raw.flags |= loom_buffer_host_dirty;
    }
    return raw.host;
}

bool RawBuffer::has_device_memory() const {
    LOOM_CHECK_DEFINED("has_device_memory");
    return contents->raw.device != 0;
}

bool RawBuffer::host_dirty() const {
    LOOM_CHECK_DEFINED("host_dirty");
    return contents->raw.flags & loom_buffer_host_dirty;
}

bool RawBuffer::device_dirty() const {
    LOOM_CHECK_DEFINED("device_dirty");
    return contents->raw.flags & loom_buffer_device_dirty;
}

void RawBuffer::copy_to_host() const {
    LOOM_CHECK_DEFINED("copy_to_host");
    make_host_current(*contents);
}

void RawBuffer::copy_to_device() const {
    LOOM_CHECK_DEFINED("copy_to_device");
    check_device_call(loom_copy_to_device(&contents->raw), contents->name, "copy_to_device");
}

void RawBuffer::device_free() const {
    LOOM_CHECK_DEFINED("device_free");
    make_host_current(*contents);
    check_device_call(loom_device_free(&contents->raw), contents->name, "device_free");
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
    return b;
}

BufferContents::~BufferContents() {
    if (raw.flags & loom_buffer_device_owned) loom_device_free(&raw);
}

loom_buffer_t *RawBuffer::raw_buffer() const {
    LOOM_CHECK_DEFINED("raw_buffer");
    return &contents->raw;
}

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
    r.contents = copy_contents(*contents);
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
    r.contents = copy_contents(*contents);
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
