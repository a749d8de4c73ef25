// The memory a JIT-compiled module lives in: one mapping per object, so that
// its code, constants and data lie together.
//
// Code compiled for the small code model (all of Loom's, for speed) reaches
// its constant pools, jump tables, GOT entries and call stubs with 32-bit
// PC-relative offsets, so every section of an object must lie within 2 GiB
// of the others. LLVM's SectionMemoryManager maps each section on its own,
// wherever the kernel finds room; in a process whose address space is
// fragmented (a GPU process: the CUDA driver and NVRTC map and unmap large
// regions) two sections can land far apart, and RuntimeDyld then truncates
// the offset silently: the code reads or jumps to a wrong address.
#pragma once

#include <memory>
#include <string>

#include <llvm/ExecutionEngine/RuntimeDyld.h>

namespace loom {
namespace internal {

/** A memory manager for RuntimeDyld that asks for the object's whole size
 * up front (reserveAllocationSpace) and places every section inside that
 * one mapping. */
std::unique_ptr<llvm::RuntimeDyld::MemoryManager> make_jit_memory_manager();

/** Why the last section this thread asked for could not be placed (empty if
 * none failed), and forgets it: RuntimeDyld's own error says only that it
 * could not allocate. */
std::string take_jit_memory_failure();

}  // namespace internal
}  // namespace loom
