// Tests of needs_barrier_between and insert_gpu_barriers: a barrier goes
// where one thread may touch what another touched, a write among the two,
// and nowhere else.
#include <gtest/gtest.h>

#include "gpu/CrossThreadReductions.h"
#include "gpu/GpuBarriers.h"
#include "ir/IRPrinter.h"
#include "ir/IRVisitor.h"
#include "loom/IROperator.h"
#include "loop_ir_eval.h"

using namespace loom;
using namespace loom::internal;
using loom_test::collect_nodes;

namespace {

Expr var(const std::string &n) { return Variable::make(Int(32), n); }
Expr load(const std::string &buf, Expr idx) {
    return Load::make(Float(32), buf, std::move(idx), const_true());
}
Stmt store(const std::string &buf, Expr value, Expr idx) {
    return Store::make(buf, std::move(value), std::move(idx), const_true());
}
Expr intrinsic(Type t, const char *name, const std::vector<Expr> &args = {}) {
    return Call::make(t, name, args, Call::Intrinsic);
}
Stmt barrier() { return Evaluate::make(intrinsic(Int(32), gpu_intrinsic::barrier)); }

/** A loop over 64 threads, named func.sK.var as lowering names them. */
Stmt threads(const std::string &loop, Stmt body) {
    return For::make(loop, 0, 64, ForType::GPUThread, std::move(body));
}
/** Every thread t writes buffer[t] = value, in stage `stage` of the
 * buffer's Func. */
Stmt each_thread_writes(const std::string &buffer, Expr value, int stage = 0) {
    const std::string t = buffer + ".s" + std::to_string(stage) + ".t";
    return threads(t, store(buffer, std::move(value), var(t)));
}
/** Every thread t reads source[63 - t] into out[t] (out is not shared). */
Stmt each_thread_reads(const std::string &source) {
    return threads("out.s0.t", store("out", load(source, 63 - var("out.s0.t")), var("out.s0.t")));
}
/** The block's first thread alone runs s. */
Stmt first_thread(Stmt s) {
    return IfThenElse::make(intrinsic(Bool(), gpu_intrinsic::first_thread), std::move(s));
}

const std::set<std::string> shared = {"f", "g"};

int barriers_in(const Stmt &s) {
    struct Count : IRVisitor {
        int n = 0;
        using IRVisitor::visit;
        void visit(const Call *op) override {
            n += op->is_intrinsic(gpu_intrinsic::barrier);
            IRVisitor::visit(op);
        }
    } count;
    s.accept(&count);
    return count.n;
}

}  // namespace

TEST(GpuBarriers, AWriteAndAnotherThreadsAccessNeedOne) {
    EXPECT_TRUE(
        needs_barrier_between(each_thread_writes("f", 1.0f), each_thread_reads("f"), shared));
    // A read, then another thread's write of the element (write after read).
    EXPECT_TRUE(
        needs_barrier_between(each_thread_reads("f"), each_thread_writes("f", 1.0f), shared));
    // Two reads, or storage the threads do not share, need none.
    EXPECT_FALSE(needs_barrier_between(each_thread_reads("f"), each_thread_reads("f"), shared));
    EXPECT_FALSE(
        needs_barrier_between(each_thread_writes("f", 1.0f), each_thread_reads("g"), shared));
    EXPECT_FALSE(
        needs_barrier_between(each_thread_writes("h", 1.0f), each_thread_reads("h"), shared));
}

TEST(GpuBarriers, WritesOfAPureDefinitionNeedNone) {
    // Two parts of one copy (a steady loop and its tail): any point both
    // write, they write the same value.
    EXPECT_FALSE(needs_barrier_between(each_thread_writes("f", load("in", var("f.s0.t"))),
                                       each_thread_writes("f", load("in", var("f.s0.t") + 64)),
                                       shared));
    // An update's write after the initial value's is ordered.
    EXPECT_TRUE(needs_barrier_between(each_thread_writes("f", 0.0f),
                                      each_thread_writes("f", 1.0f, 1), shared));
}

TEST(GpuBarriers, TheFirstThreadsOwnAccessesNeedNone) {
    Stmt init = first_thread(store("f", 0.0f, 0));
    Stmt fold = first_thread(store("f", load("f", 0) + 1.0f, 0));
    EXPECT_FALSE(needs_barrier_between(init, fold, shared));
    // The other threads read its value, or it reads theirs.
    EXPECT_TRUE(needs_barrier_between(init, each_thread_reads("f"), shared));
    EXPECT_TRUE(needs_barrier_between(each_thread_writes("f", 1.0f), fold, shared));
    // Code outside the thread loops runs on every thread.
    Stmt every_thread_reads = LetStmt::make("v", load("f", 0), store("out", var("v"), 0));
    EXPECT_TRUE(needs_barrier_between(init, every_thread_reads, shared));
}

TEST(GpuBarriers, ABarrierOrAReductionAcrossTheBlockBetweenIsEnough) {
    Stmt write = each_thread_writes("f", 1.0f);
    EXPECT_FALSE(
        needs_barrier_between(write, Block::make(barrier(), each_thread_reads("f")), shared));
    EXPECT_FALSE(
        needs_barrier_between(Block::make(write, barrier()), each_thread_reads("f"), shared));
    // Through the scopes around a sequence.
    Stmt scoped = ProducerConsumer::make_consume(
        "f", LetStmt::make("n", 3, Block::make(barrier(), each_thread_reads("f"))));
    EXPECT_FALSE(needs_barrier_between(write, scoped, shared));
    // Combining partials across the block waits for every thread.
    Stmt reduce = store("partial",
                        intrinsic(Float(32), gpu_intrinsic::block_reduce,
                                  {load("partial", 0), make_const(Int(32), 0)}),
                        0);
    EXPECT_FALSE(needs_barrier_between(write, Block::make(reduce, each_thread_reads("f")), shared));
    // A barrier that a loop or a branch may skip is not.
    Stmt maybe = For::make("i", 0, var("n"), ForType::Serial, barrier());
    EXPECT_TRUE(needs_barrier_between(write, Block::make(maybe, each_thread_reads("f")), shared));
}

TEST(GpuBarriers, InsertedFromTheInsideOut) {
    // f is written, read, and read again: the barrier after the write
    // serves both reads.
    Stmt body = Block::make({Block::make(each_thread_writes("f", 1.0f), each_thread_reads("f")),
                             each_thread_reads("f")});
    Stmt kernel =
        For::make("out.s0.b", 0, 8, ForType::GPUBlock,
                  Allocate::make("f", Float(32), MemoryType::Auto, {64}, const_true(), body));
    Stmt with = insert_gpu_barriers(kernel, {}, {});
    EXPECT_EQ(barriers_in(with), 1) << with;
    // The per-thread partials are not shared.
    Stmt partial =
        For::make("out.s0.b", 0, 8, ForType::GPUBlock,
                  Allocate::make("f", Float(32), MemoryType::Register, {1}, const_true(), body));
    EXPECT_EQ(barriers_in(insert_gpu_barriers(partial, {"f"}, {})), 0);
    // Device memory the kernel reads and writes is shared when named so.
    EXPECT_EQ(barriers_in(insert_gpu_barriers(For::make("out.s0.b", 0, 8, ForType::GPUBlock, body),
                                              {}, {"f"})),
              1);
    // With no thread loops, a block is one thread.
    Stmt single =
        For::make("out.s0.b", 0, 8, ForType::GPUBlock,
                  Allocate::make("f", Float(32), MemoryType::Auto, {1}, const_true(),
                                 Block::make(store("f", 1.0f, 0), store("out", load("f", 0), 0))));
    EXPECT_TRUE(insert_gpu_barriers(single, {}, {}).same_as(single));
}

TEST(GpuBarriers, ASerialLoopsNextIterationFollowsItsLast) {
    auto kernel = [](Stmt body, const std::string &loop = "out.s0.k") {
        return For::make("out.s0.b", 0, 8, ForType::GPUBlock,
                         Allocate::make("f", Float(32), MemoryType::Auto, {256}, const_true(),
                                        For::make(loop, 0, 4, ForType::Serial, std::move(body))));
    };
    // Each iteration writes f, then reads it: the next one's writes must
    // wait for this one's reads.
    Stmt with = insert_gpu_barriers(
        kernel(Block::make(each_thread_writes("f", var("out.s0.k")), each_thread_reads("f"))), {},
        {});
    EXPECT_EQ(barriers_in(with), 2) << with;
    const For *k = collect_nodes<For>(with)[1];
    ASSERT_EQ(k->name, "out.s0.k");
    const Block *last = k->body.as<Block>();
    ASSERT_NE(last, nullptr);
    while (const Block *b = last->rest.as<Block>()) last = b;
    const Evaluate *end = last->rest.as<Evaluate>();
    EXPECT_TRUE(end && end->value.as<Call>()->is_intrinsic(gpu_intrinsic::barrier)) << with;
    // A loop of f's own definition that only copies into it needs none:
    // its loads run ahead.
    Stmt copy = threads("f.s0.t", store("f", load("in", var("f.s0.o") * 64 + var("f.s0.t")),
                                        var("f.s0.o") * 64 + var("f.s0.t")));
    EXPECT_EQ(barriers_in(insert_gpu_barriers(kernel(copy, "f.s0.o"), {}, {})), 0);
    // A loop around f's computation makes a new f each iteration: a late
    // thread's write of the last one must not land on the next one's.
    EXPECT_EQ(barriers_in(insert_gpu_barriers(
                  kernel(each_thread_writes("f", load("in", var("out.s0.k") * 64 + var("f.s0.t")))),
                  {}, {})),
              1);
}
