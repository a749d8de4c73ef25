// The runtime services compiled code uses (errors, memory, the thread pool),
// and target strings.
#include <gtest/gtest.h>

#include <atomic>
#include <cstdint>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "loom/Error.h"
#include "loom/Target.h"
#include "loom/runtime/loom_runtime.h"

using loom::Target;

TEST(Runtime, ErrorMessagesArePerThread) {
    loom_error_begin();
    loom_error_append_string("x = ");
    loom_error_append_int(-42);
    loom_error_append_string(", y = ");
    loom_error_append_float(0.5);
    EXPECT_EQ(loom_error_end(), loom_error_generic);
    EXPECT_STREQ(loom_last_error_message(), "x = -42, y = 0.5");
    std::string other;
    std::thread t([&] {
        other = loom_last_error_message();
        loom_error_begin();
        loom_error_append_string("thread");
        loom_error_end();
    });
    t.join();
    EXPECT_EQ(other, "");
    EXPECT_STREQ(loom_last_error_message(), "x = -42, y = 0.5");
}

namespace {
std::string handled;
void handler(const char *msg) { handled = msg; }
}  // namespace

TEST(Runtime, ErrorHandlerIsCalled) {
    loom_set_error_handler(handler);
    loom_error_begin();
    loom_error_append_string("boom");
    loom_error_end();
    loom_set_error_handler(nullptr);
    EXPECT_EQ(handled, "boom");
}

TEST(Runtime, MallocIsAligned) {
    for (size_t n : {0, 1, 63, 64, 65, 1000, 1 << 20}) {
        void *p = loom_malloc(n);
        ASSERT_NE(p, nullptr);
        EXPECT_EQ(reinterpret_cast<uintptr_t>(p) % 64, 0u);
        std::memset(p, 1, n);
        loom_free(p);
    }
    loom_free(nullptr);
    // A size whose bookkeeping would overflow is refused, not wrapped.
    EXPECT_EQ(loom_malloc(SIZE_MAX), nullptr);
    EXPECT_EQ(loom_malloc(SIZE_MAX - 8), nullptr);
}

namespace {

int32_t count_task(int32_t i, uint8_t *closure) {
    auto *counts = reinterpret_cast<std::atomic<int> *>(closure);
    counts[i].fetch_add(1);
    return 0;
}

int32_t failing_task(int32_t i, uint8_t *closure) {
    if (i == 50 || i == 70) {
        loom_error_begin();
        loom_error_append_string("task ");
        loom_error_append_int(i);
        return loom_error_end();
    }
    return 0;
}

int32_t inner_task(int32_t i, uint8_t *closure) {
    reinterpret_cast<std::atomic<int> *>(closure)->fetch_add(1);
    return 0;
}

int32_t outer_task(int32_t i, uint8_t *closure) {
    // A nested parallel loop: must run (serially) without deadlock.
    return loom_do_par_for(inner_task, 0, 10, closure);
}

}  // namespace

TEST(Runtime, ParForRunsEveryIterationOnce) {
    EXPECT_GE(loom_num_threads(), 1);
    std::vector<std::atomic<int>> counts(1000);
    for (auto &c : counts) c = 0;
    ASSERT_EQ(loom_do_par_for(count_task, 0, 1000, reinterpret_cast<uint8_t *>(counts.data())), 0);
    for (auto &c : counts) EXPECT_EQ(c.load(), 1);
    // Empty and negative extents do nothing; a nonzero min works.
    EXPECT_EQ(loom_do_par_for(count_task, 0, 0, nullptr), 0);
    EXPECT_EQ(loom_do_par_for(count_task, 0, -5, nullptr), 0);
    ASSERT_EQ(loom_do_par_for(count_task, 500, 500, reinterpret_cast<uint8_t *>(counts.data())), 0);
    for (int i = 0; i < 1000; i++) EXPECT_EQ(counts[i].load(), i < 500 ? 1 : 2);
}

TEST(Runtime, ParForReturnsFailureAndMessage) {
    for (int rep = 0; rep < 20; rep++) {
        loom_error_begin();
        int32_t r = loom_do_par_for(failing_task, 0, 100, nullptr);
        EXPECT_EQ(r, loom_error_generic);
        std::string msg = loom_last_error_message();
        EXPECT_TRUE(msg == "task 50" || msg == "task 70") << msg;
    }
}

TEST(Runtime, NestedParForDoesNotDeadlock) {
    std::atomic<int> n{0};
    ASSERT_EQ(loom_do_par_for(outer_task, 0, 64, reinterpret_cast<uint8_t *>(&n)), 0);
    EXPECT_EQ(n.load(), 640);
}

TEST(Runtime, ConcurrentParForsFromSeveralThreads) {
    std::vector<std::thread> threads;
    std::atomic<int> total{0};
    for (int t = 0; t < 4; t++) {
        threads.emplace_back([&] {
            for (int rep = 0; rep < 50; rep++) {
                std::atomic<int> n{0};
                EXPECT_EQ(loom_do_par_for(inner_task, 0, 37, reinterpret_cast<uint8_t *>(&n)), 0);
                total += n.load();
            }
        });
    }
    for (auto &t : threads) t.join();
    EXPECT_EQ(total.load(), 4 * 50 * 37);
}

TEST(TargetString, ParseAndPrint) {
    Target t("x86-64-linux-avx2");
    EXPECT_TRUE(t.has_feature(Target::AVX2));
    EXPECT_TRUE(t.has_feature(Target::AVX));
    EXPECT_TRUE(t.has_feature(Target::FMA));
    EXPECT_TRUE(t.has_feature(Target::F16C));
    EXPECT_FALSE(t.has_feature(Target::AVX512));
    EXPECT_EQ(t.vector_bytes(), 32);
    EXPECT_EQ(Target(t.to_string()), t);

    Target a("x86-64-linux-avx512-no_asserts-debug");
    EXPECT_TRUE(a.has_feature(Target::AVX512));
    EXPECT_TRUE(a.has_feature(Target::AVX2));
    EXPECT_TRUE(a.has_feature(Target::NoAsserts));
    EXPECT_TRUE(a.has_feature(Target::Debug));
    EXPECT_EQ(a.vector_bytes(), 64);
    EXPECT_EQ(Target(a.to_string()), a);

    Target b("x86-64-linux");
    EXPECT_FALSE(b.has_feature(Target::SSE41));
    EXPECT_EQ(b.vector_bytes(), 16);
    EXPECT_EQ(b.to_string(), "x86-64-linux");
    EXPECT_EQ(b.with_feature(Target::AVX).to_string(), "x86-64-linux-sse41-avx");
    EXPECT_FALSE(a.without_feature(Target::AVX2).has_feature(Target::AVX512));

    Target h("host");
    EXPECT_EQ(h, Target::host());
    EXPECT_EQ(Target(), Target::host());
    Target hn("host-no_asserts");
    EXPECT_TRUE(hn.has_feature(Target::NoAsserts));
    EXPECT_EQ(hn.without_feature(Target::NoAsserts), Target::host());
    Target fl("host-fast_math-llvm_loop_opt");
    EXPECT_TRUE(fl.has_feature(Target::FastMath));
    EXPECT_TRUE(fl.has_feature(Target::LLVMLoopOpt));
    EXPECT_FALSE(Target::host().has_feature(Target::LLVMLoopOpt));  // off by default
    EXPECT_EQ(Target(fl.to_string()), fl);

    EXPECT_THROW(Target("arm-linux"), loom::CompileError);
    EXPECT_THROW(Target("x86-64-windows"), loom::CompileError);
    EXPECT_THROW(Target("x86-64-linux-avx3"), loom::CompileError);
    EXPECT_THROW(Target(""), loom::CompileError);
}
