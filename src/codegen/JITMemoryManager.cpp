// See JITMemoryManager.h: why an object's sections share one mapping.
#include "codegen/JITMemoryManager.h"

#include <llvm/ExecutionEngine/RTDyldMemoryManager.h>
#include <llvm/Support/Memory.h>
#include <llvm/Support/Process.h>

#include <algorithm>
#include <string>
#include <vector>

namespace loom {
namespace internal {

namespace {

std::string &last_jit_memory_failure() {
    thread_local std::string failure;
    return failure;
}

uintptr_t align_up(uintptr_t v, uintptr_t a) { return (v + a - 1) / a * a; }

class ContiguousMemoryManager : public llvm::RTDyldMemoryManager {
  public:
    ~ContiguousMemoryManager() override {
        for (llvm::sys::MemoryBlock &b : mappings) llvm::sys::Memory::releaseMappedMemory(b);
    }

    bool needsToReserveAllocationSpace() override { return true; }

    // RuntimeDyld's sizes are upper bounds, each section rounded up to its
    // group's alignment, stubs included, except for one thing: on x86-64
    // each call stub also takes a GOT entry (8 bytes for a stub of at least
    // 6), which its GOT size leaves out; the writable group gets room for
    // as many as the code could hold. Each group starts on a page of its
    // own, so that it can be given its own protection.
    void reserveAllocationSpace(uintptr_t code_size, uint32_t code_align, uintptr_t ro_size,
                                uint32_t ro_align, uintptr_t rw_size, uint32_t rw_align) override {
        const uintptr_t page = llvm::sys::Process::getPageSizeEstimate();
        const uintptr_t code_bytes =
            std::max(page, align_up(code_size + slack(code_align, page), page));
        const uintptr_t ro_bytes = align_up(ro_size + slack(ro_align, page), page);
        const uintptr_t stub_got = (code_size / 6 + 1) * 8;
        const uintptr_t rw_bytes = align_up(rw_size + stub_got + slack(rw_align, page), page);
        std::error_code ec;
        llvm::sys::MemoryBlock block = llvm::sys::Memory::allocateMappedMemory(
            code_bytes + ro_bytes + rw_bytes, nullptr,
            llvm::sys::Memory::MF_READ | llvm::sys::Memory::MF_WRITE, ec);
        if (ec || !block.base()) {
            // RuntimeDyld reports the failure when it asks for a section
            // (no exception may cross LLVM's frames).
            reservation_failure = "could not map " +
                                  std::to_string(code_bytes + ro_bytes + rw_bytes) +
                                  " bytes for compiled code: " + ec.message();
            reserved = false;
            return;
        }
        mappings.push_back(block);
        auto *base = static_cast<uint8_t *>(block.base());
        code = Group{base, base, code_bytes, true};
        ro = Group{base + code_bytes, base + code_bytes, ro_bytes, false};
        rw = Group{base + code_bytes + ro_bytes, base + code_bytes + ro_bytes, rw_bytes, false};
        for (const Group &g : {code, ro}) {
            if (g.size) unprotected.push_back(g);
        }
        reserved = true;
    }

    uint8_t *allocateCodeSection(uintptr_t size, unsigned align, unsigned,
                                 llvm::StringRef name) override {
        return take(code, size, align, name);
    }
    uint8_t *allocateDataSection(uintptr_t size, unsigned align, unsigned, llvm::StringRef name,
                                 bool read_only) override {
        return take(read_only ? ro : rw, size, align, name);
    }

    // Code becomes read-only and executable, constants read-only; the
    // writable data stays as it is.
    bool finalizeMemory(std::string *error) override {
        using llvm::sys::Memory;
        for (const Group &g : unprotected) {
            llvm::sys::MemoryBlock b(g.begin, g.size);
            unsigned flags = Memory::MF_READ | (g.executable ? Memory::MF_EXEC : 0);
            if (std::error_code ec = Memory::protectMappedMemory(b, flags)) {
                if (error) *error = "could not protect JIT-compiled code: " + ec.message();
                return true;
            }
            if (g.executable) Memory::InvalidateInstructionCache(g.begin, g.size);
        }
        unprotected.clear();
        return false;
    }

  private:
    struct Group {
        uint8_t *begin = nullptr, *next = nullptr;
        uintptr_t size = 0;
        bool executable = false;
    };
    // The current object's three groups; the code and constants of every
    // object not yet finalized.
    Group code, ro, rw;
    bool reserved = false;
    std::string reservation_failure;  // why the last reservation failed
    std::vector<Group> unprotected;
    std::vector<llvm::sys::MemoryBlock> mappings;

    static uintptr_t slack(uint32_t align, uintptr_t page) {
        return align > page ? align - page : 0;
    }

    // Where a section goes, or null (RuntimeDyld then fails the object) if
    // it does not fit what was reserved.
    uint8_t *take(Group &g, uintptr_t size, unsigned align, llvm::StringRef name) {
        if (!reserved) {
            last_jit_memory_failure() =
                reservation_failure.empty()
                    ? "section " + name.str() + " came before any reservation"
                    : reservation_failure;
            return nullptr;
        }
        const uintptr_t a = std::max(1u, align);
        const uintptr_t at = align_up(reinterpret_cast<uintptr_t>(g.next), a);
        if (at + size > reinterpret_cast<uintptr_t>(g.begin) + g.size) {
            last_jit_memory_failure() = "section " + name.str() + " (" + std::to_string(size) +
                                        " bytes) does not fit the space reserved for its object";
            return nullptr;
        }
        g.next = reinterpret_cast<uint8_t *>(at + size);
        return reinterpret_cast<uint8_t *>(at);
    }
};

}  // namespace

std::string take_jit_memory_failure() {
    std::string failure;
    std::swap(failure, last_jit_memory_failure());
    return failure;
}

std::unique_ptr<llvm::RuntimeDyld::MemoryManager> make_jit_memory_manager() {
    return std::make_unique<ContiguousMemoryManager>();
}

}  // namespace internal
}  // namespace loom
