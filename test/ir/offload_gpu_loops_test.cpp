// OffloadGPULoops and the host intrinsics it writes: a GPU pipeline's host
// code reaches the GPU through the runtime's device interface alone, and a
// failed call returns its error after the cleanups in scope have run.
#include <fstream>
#include <iterator>
#include <regex>

#include "codegen/CodeGen_LLVM.h"
#include "codegen/NVRTC.h"
#include "codegen_test_util.h"
#include "loom/loom.h"

using namespace cgtest;

namespace {

Expr extern_call(const char *fn, const std::vector<Expr> &args) {
    return Call::make(Int(32), fn, args, Call::Extern);
}

int count_of(const std::string &s, const std::string &what) {
    int n = 0;
    for (size_t at = s.find(what); at != std::string::npos; at = s.find(what, at + 1)) n++;
    return n;
}

}  // namespace

TEST(HostIntrinsics, ErrorReturnsRunTheCleanupsInScope) {
    // out[0] = 7 unless `fail` says to stop first: 1 by a failed check, 2 by
    // a call that reports an error. Either way the cleanup in scope appends
    // to the message, and only then.
    Expr fail = var("fail");
    Expr cleanup = extern_call("loom_error_append_string", {StringImm::make(" (cleaned up)")});
    Stmt body = Block::make(
        {IfThenElse::make(EQ::make(fail, i32(1)),
                          AssertStmt::make(const_false(), StringImm::make("failed"))),
         IfThenElse::make(
             EQ::make(fail, i32(2)),
             Evaluate::make(Call::make(Int(32), HostIntrinsic::return_on_error,
                                       {extern_call("loom_error_end", {})}, Call::Intrinsic))),
         store("out", i32(7), i32(0))});
    body = LetStmt::make(
        "cleanup", Call::make(Int(32), HostIntrinsic::on_error, {cleanup}, Call::Intrinsic), body);
    auto m =
        compile("cleanups", {scalar_arg("fail", Int(32)), buffer_arg("out", Int(32), 1)}, body);
    for (int f : {0, 1, 2}) {
        SCOPED_TRACE(f);
        int out = 0;
        Buf bo(&out, Int(32), {1});
        loom_error_begin();
        loom_error_append_string("the call failed");
        EXPECT_EQ(run(m, {&f, bo.arg()}), f == 0 ? 0 : loom_error_generic);
        EXPECT_EQ(out, f == 0 ? 7 : 0);
        EXPECT_EQ(std::string(loom_last_error_message()), f == 0 ? "the call failed"
                                                          : f == 1
                                                              ? "failed (cleaned up)"
                                                              : "the call failed (cleaned up)");
    }
}

TEST(OffloadGPULoops, HostCodeCallsTheDeviceInterface) {
    std::string why;
    if (!nvrtc_available(&why)) {
        ADD_FAILURE() << "NVRTC is needed to compile the kernels (" << why << ")";
        return;
    }
    // Two kernels, and a Func between them in GPU memory of the pipeline's.
    BufferParam in(Float(32), 1, "in");
    Param<float> k("k");
    Var x("x"), xo("xo"), xi("xi");
    Func g("g"), f("f");
    g(x) = in(x)*k;
    f(x) = g(x) + 1.0f;
    Schedule sch;
    sch[g].compute_root().gpu_tile(x, xo, xi, 64);
    sch[f].gpu_tile(x, xo, xi, 128);
    const Target target("host-cuda-sm_80");

    const std::string path = ::testing::TempDir() + "offload_gpu_loops.ll";
    Pipeline(f).compile_to_llvm_ir(path, "offloaded", sch, target);
    std::ifstream file(path);
    const std::string aot((std::istreambuf_iterator<char>(file)), std::istreambuf_iterator<char>());
    const std::string jit = Pipeline(f).compile(sch, target).llvm_ir();
    for (const std::string *ir : {&aot, &jit}) {
        // (LLVM may duplicate a call on its way through the optimizer.)
        EXPECT_GE(count_of(*ir, "call i32 @loom_device_launch("), 2) << *ir;
        EXPECT_GE(count_of(*ir, "call i32 @loom_device_buffer_for_kernel("), 2) << *ir;
        EXPECT_GE(count_of(*ir, "call i32 @loom_device_allocate("), 1) << *ir;
        EXPECT_GE(count_of(*ir, "call i32 @loom_device_deallocate("), 1) << *ir;
        EXPECT_GE(count_of(*ir, "call i32 @loom_device_finish("), 1) << *ir;
        EXPECT_EQ(ir->find("loom_cuda"), std::string::npos) << *ir;
    }
    // JIT code carries the kernels' source too, for a driver that compiles
    // it (the tests' stand-in), and exports the runtime's state for the JIT.
    EXPECT_EQ(aot.find(".cuda_source"), std::string::npos);
    EXPECT_NE(jit.find(".cuda_source"), std::string::npos);
    EXPECT_TRUE(std::regex_search(aot, std::regex("_device_module_state = internal global")))
        << aot;
    EXPECT_TRUE(std::regex_search(jit, std::regex("_device_module_state = global"))) << jit;
}
