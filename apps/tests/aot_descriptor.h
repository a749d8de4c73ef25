// A buffer descriptor built by hand, for tests that call generated
// libraries through their C ABI with no Loom header but the generated ones
// (which carry loom_runtime.h, as this does: its guard keeps one copy).
#pragma once

#include <cstdint>
#include <cstring>
#include <vector>

#include "loom_runtime.h"

// A dense descriptor over `data`: dimension 0 outermost, the last one
// contiguous, as Loom lays out a Func's arguments. It keeps its own
// loom_dimension_t array, which the descriptor points into, so it must not
// be copied once raw() was taken (hence no copy).
class Descriptor {
  public:
    Descriptor(void *data, loom_type_t type, const std::vector<int> &shape) : dims_(shape.size()) {
        int32_t stride = 1;
        for (size_t n = shape.size(); n-- > 0;) {
            dims_[n] = {0, shape[n], stride, 0};
            stride *= shape[n];
        }
        std::memset(&buf_, 0, sizeof(buf_));
        buf_.host = static_cast<uint8_t *>(data);
        buf_.type = type;
        buf_.dimensions = static_cast<int32_t>(shape.size());
        buf_.dim = dims_.data();
    }
    Descriptor(const Descriptor &) = delete;
    Descriptor &operator=(const Descriptor &) = delete;
    loom_buffer_t *raw() { return &buf_; }

  private:
    std::vector<loom_dimension_t> dims_;
    loom_buffer_t buf_;
};
