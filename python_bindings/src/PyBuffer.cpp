// loom.Buffer: a Loom buffer over its own memory or over an array's, with
// no copy either way. Arrays come in through DLPack or the buffer protocol
// (NumPy, PyTorch, CuPy, ...), keeping their strides; a Buffer goes out
// through __dlpack__ (numpy.from_dlpack, torch.from_dlpack).
#include "PyLoom.h"

#include <climits>
#include <cstring>
#include <optional>

#include <nanobind/stl/string.h>
#include <nanobind/stl/tuple.h>
#include <nanobind/stl/vector.h>

namespace loom::python {

namespace {

constexpr int kDLCPU = 1, kDLCUDA = 2, kDLCUDAHost = 3, kDLCUDAManaged = 13;

Type type_of_dtype(nb::dlpack::dtype d) {
    using C = nb::dlpack::dtype_code;
    if (d.lanes != 1) value_error("Arrays of vector elements cannot be Loom buffers");
    switch (static_cast<C>(d.code)) {
    case C::Int:
        if (d.bits == 8 || d.bits == 16 || d.bits == 32 || d.bits == 64) return Int(d.bits);
        break;
    case C::UInt:
        if (d.bits == 8 || d.bits == 16 || d.bits == 32 || d.bits == 64) return UInt(d.bits);
        break;
    case C::Float:
        if (d.bits == 16 || d.bits == 32 || d.bits == 64) return Float(d.bits);
        break;
    case C::Bfloat:
        if (d.bits == 16) return BFloat(16);
        break;
    case C::Bool:
        if (d.bits == 8) return Bool();
        break;
    default: break;
    }
    value_error("Loom has no element type for arrays of DLPack type code " +
                std::to_string(d.code) + " with " + std::to_string(d.bits) +
                " bits (complex and 8-bit float arrays have no Loom counterpart)");
}

nb::dlpack::dtype dtype_of_type(Type t) {
    nb::dlpack::dtype d;
    d.lanes = 1;
    d.bits = static_cast<uint8_t>(t.bytes() * 8);
    using C = nb::dlpack::dtype_code;
    d.code = static_cast<uint8_t>(t.is_bool()     ? C::Bool
                                  : t.is_bfloat() ? C::Bfloat
                                  : t.is_float()  ? C::Float
                                  : t.is_uint()   ? C::UInt
                                                  : C::Int);
    return d;
}

bool is_numpy_bfloat16(nb::handle obj) {
    if (!nb::hasattr(obj, "dtype") || !nb::hasattr(obj, "view")) return false;
    nb::handle tp = (PyObject *)Py_TYPE(obj.ptr());
    std::string module = nb::cast<std::string>(tp.attr("__module__"));
    return module == "numpy" && py_str(obj.attr("dtype")) == "bfloat16";
}

int checked_int(int64_t v, const char *what, const std::string &name) {
    if (v > INT_MAX || v < INT_MIN) {
        value_error("The array's " + std::string(what) + " " + std::to_string(v) + " (" + name +
                    ") does not fit in the 32-bit int that Loom's buffers use");
    }
    return static_cast<int>(v);
}

PyBuffer wrap(nb::handle obj, const std::string &name) {
    PyBuffer b;
    b.owner = nb::borrow(obj);
    nb::object src = b.owner;
    std::optional<Type> type;
    // NumPy cannot export ml_dtypes' bfloat16 through DLPack: take its bits.
    if (is_numpy_bfloat16(obj)) {
        src = obj.attr("view")("uint16");
        type = BFloat(16);
    }
    if (!nb::try_cast(src, b.array)) {
        type_error(
            "loom.Buffer wraps a NumPy array, a PyTorch tensor or another object with "
            "__dlpack__ or the buffer protocol, not " +
            py_type_name(obj));
    }
    const nb::ndarray<nb::ro> &a = b.array;
    Type t = type ? *type : type_of_dtype(a.dtype());
    std::vector<int> shape(a.ndim()), strides(a.ndim());
    for (size_t d = 0; d < a.ndim(); d++) {
        shape[d] = checked_int(a.shape(d), "extent",
                               name.empty() ? "dimension " + std::to_string(d) : name);
        strides[d] = checked_int(a.stride(d), "stride", "dimension " + std::to_string(d));
    }
    int device = a.device_type();
    void *data = const_cast<void *>(a.data());
    if (device == kDLCPU || device == kDLCUDAHost || device == kDLCUDAManaged) {
        b.buffer = RawBuffer::wrap(t, data, shape, strides, name);
    } else if (device == kDLCUDA) {
        b.buffer =
            RawBuffer::wrap_device(t, reinterpret_cast<uint64_t>(data), shape, strides, name);
    } else {
        value_error(
            "loom.Buffer wraps arrays in host or CUDA memory; this one is on DLPack "
            "device type " +
            std::to_string(device));
    }
    return b;
}

/** The buffer's memory as an ndarray owned by the Python Buffer `self`;
 * with raw_bits, as unsigned integers of the same width (NumPy has no
 * bfloat16 of its own). */
nb::object as_ndarray(nb::handle self, bool raw_bits) {
    PyBuffer &b = nb::cast<PyBuffer &>(self);
    const RawBuffer &r = b.buffer;
    int n = r.dimensions();
    std::vector<size_t> shape(n);
    std::vector<int64_t> strides(n);
    for (int d = 0; d < n; d++) {
        shape[d] = static_cast<size_t>(r.extent(d));
        strides[d] = r.stride(d);
    }
    void *data = r.host();
    int device = kDLCPU;
    if (!data) {
        data = reinterpret_cast<void *>(r.raw_buffer()->device);
        device = kDLCUDA;
    }
    Type t = raw_bits ? UInt(r.type().bytes() * 8) : r.type();
    nb::ndarray<nb::array_api> a(data, n, shape.data(), self, strides.data(), dtype_of_type(t),
                                 device, 0);
    return nb::cast(a, nb::rv_policy::reference);
}

/** The point b[key] names: an int, or a tuple of one int per dimension. */
std::vector<int> coordinates_of(const RawBuffer &b, nb::handle key) {
    std::vector<int> c;
    if (!nb::try_cast(key, c)) {
        int i;
        if (!nb::try_cast(key, i)) type_error("Buffer indices are ints");
        c = {i};
    }
    check_coordinates(b, c);
    return c;
}

}  // namespace

void define_buffer(nb::module_ &m) {
    nb::class_<PyBuffer>(m, "Buffer",
                         "An n-dimensional array in NumPy's index order (last index "
                         "innermost): Loom's own memory, or a NumPy array's or PyTorch tensor's "
                         "without a copy.")
        .def(
            "__init__",
            [](PyBuffer *self, nb::handle type_or_array, nb::handle shape,
               const std::string &name) {
                if (shape.is_none()) {
                    new (self) PyBuffer(wrap(type_or_array, name));
                    return;
                }
                std::vector<int> s;
                if (!nb::try_cast(shape, s)) {
                    type_error("Buffer(type, shape): shape must be a sequence of ints, not " +
                               py_type_name(shape));
                }
                new (self) PyBuffer();
                self->buffer = RawBuffer(to_type(type_or_array, "the type of Buffer"), s, name);
            },
            nb::arg("type_or_array"), nb::arg("shape") = nb::none(), nb::arg("name") = "",
            "Buffer(array): wraps a NumPy array, PyTorch tensor (CPU or CUDA) or DLPack producer "
            "without a copy, keeping its strides. Buffer(type, shape): a new zeroed buffer.")
        .def_prop_ro("type", [](const PyBuffer &b) { return b.buffer.type(); })
        .def_prop_ro("name", [](const PyBuffer &b) { return b.buffer.name(); })
        .def_prop_ro("shape",
                     [](const PyBuffer &b) {
                         nb::list l;
                         for (int e : b.buffer.shape()) l.append(e);
                         return nb::tuple(l);
                     })
        .def_prop_ro(
            "strides",
            [](const PyBuffer &b) {
                nb::list l;
                for (int d = 0; d < b.buffer.dimensions(); d++) l.append(b.buffer.stride(d));
                return nb::tuple(l);
            },
            "In elements, as DLPack counts them (NumPy's strides are in bytes).")
        .def("dimensions", [](const PyBuffer &b) { return b.buffer.dimensions(); })
        .def("dim_min", [](const PyBuffer &b, int d) { return b.buffer.dim_min(d); })
        .def("extent", [](const PyBuffer &b, int d) { return b.buffer.extent(d); })
        .def("stride", [](const PyBuffer &b, int d) { return b.buffer.stride(d); })
        .def("number_of_elements", [](const PyBuffer &b) { return b.buffer.number_of_elements(); })
        .def("set_min", [](PyBuffer &b, const std::vector<int> &mins) { b.buffer.set_min(mins); })
        .def(
            "cropped",
            [](const PyBuffer &b, int d, int min, int extent) {
                PyBuffer r = b;
                r.buffer = b.buffer.cropped(d, min, extent);
                return r;
            },
            nb::arg("d"), nb::arg("min"), nb::arg("extent"))
        .def(
            "transposed",
            [](const PyBuffer &b, const std::vector<int> &order) {
                PyBuffer r = b;
                r.buffer = b.buffer.transposed(order);
                return r;
            },
            nb::arg("order"))
        .def("has_device_memory", [](const PyBuffer &b) { return b.buffer.has_device_memory(); })
        .def("host_dirty", [](const PyBuffer &b) { return b.buffer.host_dirty(); })
        .def("device_dirty", [](const PyBuffer &b) { return b.buffer.device_dirty(); })
        .def("copy_to_host", [](const PyBuffer &b) { b.buffer.copy_to_host(); })
        .def("copy_to_device", [](const PyBuffer &b) { b.buffer.copy_to_device(); })
        .def("device_free", [](const PyBuffer &b) { b.buffer.device_free(); })
        .def("__getitem__",
             [](const PyBuffer &b, nb::handle key) {
                 std::vector<int> c = coordinates_of(b.buffer, key);
                 uint64_t bits = 0;
                 std::memcpy(&bits, b.buffer.address_of(c), b.buffer.type().bytes());
                 return scalar_value(bits, b.buffer.type());
             })
        .def("__setitem__",
             [](const PyBuffer &b, nb::handle key, nb::handle value) {
                 std::vector<int> c = coordinates_of(b.buffer, key);
                 uint64_t bits =
                     scalar_bits(value, b.buffer.type(), "An element of " + b.buffer.name());
                 std::memcpy(b.buffer.address_of(c), &bits, b.buffer.type().bytes());
             })
        .def("__dlpack__",
             [](nb::handle self, nb::kwargs kw) {
                 return as_ndarray(self, false).attr("__dlpack__")(**kw);
             })
        .def("__dlpack_device__",
             [](nb::handle self) { return as_ndarray(self, false).attr("__dlpack_device__")(); })
        .def("_as_ndarray", &as_ndarray, nb::arg("raw_bits") = false)
        .def_prop_ro(
            "owner", [](const PyBuffer &b) { return b.owner; },
            "The array this Buffer wraps (None for Loom's own memory).")
        .def("__repr__", [](const PyBuffer &b) {
            std::string s =
                "<loom.Buffer " + b.buffer.name() + " " + type_to_string(b.buffer.type()) + " (";
            for (int d = 0; d < b.buffer.dimensions(); d++) {
                s += (d ? ", " : "") + std::to_string(b.buffer.extent(d));
            }
            return s + ")>";
        });
}

void check_coordinates(const RawBuffer &b, const std::vector<int> &c) {
    if (static_cast<int>(c.size()) != b.dimensions()) {
        value_error("Buffer " + b.name() + " has " + std::to_string(b.dimensions()) +
                    " dimensions but is indexed with " + std::to_string(c.size()));
    }
    for (size_t d = 0; d < c.size(); d++) {
        int lo = b.dim_min(d), hi = lo + b.extent(d);
        if (c[d] < lo || c[d] >= hi) {
            throw nb::index_error(("Index " + std::to_string(c[d]) + " of dimension " +
                                   std::to_string(d) + " of buffer " + b.name() + " is outside [" +
                                   std::to_string(lo) + ", " + std::to_string(hi) + ")")
                                      .c_str());
        }
    }
}

}  // namespace loom::python
