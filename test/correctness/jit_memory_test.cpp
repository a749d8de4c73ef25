// Where the JIT puts a module's code and data. Code compiled for the small
// code model reaches its constants (and its calls' stubs) PC-relative, with
// 32-bit offsets: all of a module's sections must lie within 2 GiB of each
// other, however the process's address space is laid out. A process that
// uses a GPU is laid out unlike a test: the CUDA driver and NVRTC map and
// unmap large regions and leave holes between them.
#include <gtest/gtest.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <vector>

#include "loom/loom.h"

using namespace loom;

namespace {

/** Lays the address space out so that each allocation of one page lands
 * 3 GiB from the previous one: a region of address space is reserved
 * (PROT_NONE, no memory behind it) with a one-page hole every 3 GiB, and
 * every free gap above it is plugged, so that the top-down allocator finds
 * those holes before any other space. Sections allocated one by one then
 * lie far apart; a module allocated in one piece does not. Undone by the
 * destructor. */
class FragmentedAddressSpace {
  public:
    FragmentedAddressSpace() {
        page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
        const size_t span = spacing * holes;
        void *r =
            mmap(nullptr, span, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
        if (r == MAP_FAILED) return;
        char *base = static_cast<char *>(r);
        // The reservation less its holes: whatever maps a page into a hole
        // while the layout stands (the JIT, the allocator, a sanitizer's
        // runtime) keeps it when the layout is undone.
        char *piece = base;
        for (int i = holes - 1; i >= 0; i--) {
            char *hole = base + span - (i + 1) * spacing + page;
            munmap(hole, page);
            plugs.emplace_back(piece, hole - piece);
            piece = hole + page;
        }
        plugs.emplace_back(piece, base + span - piece);
        plug_gaps_above(base + span);
        ready = true;
    }
    ~FragmentedAddressSpace() {
        for (auto &[p, n] : plugs) munmap(p, n);
    }
    bool ready = false;

  private:
    static constexpr size_t spacing = size_t(3) << 30;
    static constexpr int holes = 8;
    size_t page = 4096;
    std::vector<std::pair<char *, size_t>> plugs;

    // Fills each unmapped gap between `from` and the stack with PROT_NONE.
    void plug_gaps_above(char *from) {
        FILE *maps = std::fopen("/proc/self/maps", "r");
        if (!maps) return;
        std::vector<std::pair<uintptr_t, uintptr_t>> mapped;
        char line[512];
        while (std::fgets(line, sizeof line, maps)) {
            unsigned long lo = 0, hi = 0;
            if (std::sscanf(line, "%lx-%lx", &lo, &hi) == 2) mapped.emplace_back(lo, hi);
            if (std::strstr(line, "[stack]")) break;
        }
        std::fclose(maps);
        for (size_t i = 0; i + 1 < mapped.size(); i++) {
            uintptr_t lo = mapped[i].second, hi = mapped[i + 1].first;
            if (lo < reinterpret_cast<uintptr_t>(from) || hi <= lo) continue;
            void *p =
                mmap(reinterpret_cast<void *>(lo), hi - lo, PROT_NONE,
                     MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE | MAP_FIXED_NOREPLACE, -1, 0);
            if (p != MAP_FAILED) plugs.emplace_back(static_cast<char *>(p), hi - lo);
        }
    }
};

}  // namespace

TEST(JitMemory, CodeReachesItsConstantsWhereverTheAddressSpaceHasRoom) {
    // A polynomial in vectors: its coefficients are vector constants, which
    // the code loads PC-relative from a read-only section of its own.
    Var x("x");
    Func f("f");
    Expr v = cast<float>(x) * 0.001f;
    f(x) = ((v * 0.75f + 1.25f) * v - 2.5f) * v + 3.125f + select(x % 3 == 0, 0.5f, -0.25f);
    Schedule s;
    s[f].vectorize(x, 8);

    FragmentedAddressSpace layout;
    if (!layout.ready) GTEST_SKIP() << "could not reserve 24 GiB of address space (ulimit -v?)";
    CompiledPipeline p = Pipeline(f).compile(s, Target("host"));
    const int n = 1001;
    Buffer<float> out({n});
    p.realize({out});
    for (int i = 0; i < n; i++) {
        float vi = static_cast<float>(i) * 0.001f;
        float want =
            ((vi * 0.75f + 1.25f) * vi - 2.5f) * vi + 3.125f + (i % 3 == 0 ? 0.5f : -0.25f);
        ASSERT_NEAR(out(i), want, 1e-5f * std::max(1.0f, std::abs(want))) << "at " << i;
    }
}
