// The files of ahead-of-time compilation: objects, headers, assembly, LLVM IR
// and static libraries, checked in-process (the AOT code itself runs in
// test/aot, linked without libloom).
#include <gtest/gtest.h>

#include <unistd.h>
#include <cstdio>
#include <fstream>
#include <sstream>
#include <string>

#include "../aot/aot_pipelines.h"
#include "test_util.h"

using namespace loom;
using loom_test::throws_with;

namespace {

std::string temp_dir() {
    static std::string dir = [] {
        char tmpl[] = "/tmp/loom_aot_files_XXXXXX";
        const char *d = mkdtemp(tmpl);
        EXPECT_NE(d, nullptr);
        return std::string(d ? d : "/tmp");
    }();
    return dir;
}

std::string read_file(const std::string &path) {
    std::ifstream f(path, std::ios::binary);
    EXPECT_TRUE(f.good()) << path;
    std::ostringstream s;
    s << f.rdbuf();
    return s.str();
}

bool contains(const std::string &s, const std::string &piece) {
    return s.find(piece) != std::string::npos;
}

// Symbol names appear NUL-terminated in an ELF string table.
bool has_symbol_name(const std::string &elf, const std::string &name) {
    return contains(elf, std::string("\0", 1) + name + std::string("\0", 1));
}

}  // namespace

TEST(AOTFiles, ObjectHasTheEntryPoints) {
    loom_test::AotBlur p;
    std::string path = temp_dir() + "/blur.o";
    p.pipeline().compile_to_object(path, "my_blur", p.schedule, Target("x86-64-linux-avx2"));
    std::string o = read_file(path);
    ASSERT_GT(o.size(), 64u);
    EXPECT_EQ(o.substr(0, 4),
              "\x7f"
              "ELF");
    EXPECT_EQ(static_cast<unsigned char>(o[4]), 2);   // ELFCLASS64
    EXPECT_EQ(static_cast<unsigned char>(o[16]), 1);  // ET_REL
    for (const char *sym :
         {"my_blur", "my_blur_argv", "my_blur_metadata", "loom_do_par_for", "loom_error_begin"}) {
        EXPECT_TRUE(has_symbol_name(o, sym)) << sym;
    }
}

TEST(AOTFiles, HeaderDeclaresTheTypedSignature) {
    loom_test::AotBlur p;
    std::string path = temp_dir() + "/blur.h";
    p.pipeline().compile_to_header(path, "my_blur", p.schedule);
    std::string h = read_file(path);
    EXPECT_TRUE(contains(h, "int my_blur(loom_buffer_t *in, float scale, loom_buffer_t *blurred);"))
        << h;
    EXPECT_TRUE(contains(h, "int my_blur_argv(void **args);"));
    EXPECT_TRUE(contains(h, "const loom_filter_metadata_t *my_blur_metadata(void);"));
    EXPECT_TRUE(contains(h, "#ifndef LOOM_RUNTIME_H"));  // carries the runtime ABI
    EXPECT_TRUE(contains(h, "extern \"C\""));

    loom_test::AotHalf half;
    half.pipeline().compile_to_header(path, "halves", half.schedule);
    h = read_file(path);
    EXPECT_TRUE(contains(h,
                         "int halves(loom_buffer_t *q, uint16_t bias, loom_buffer_t *f_0, "
                         "loom_buffer_t *f_1);"))
        << h;
}

TEST(AOTFiles, AssemblyFollowsTheTarget) {
    // 16-wide float vectors fill one zmm register, whatever machine compiles.
    loom_test::AotBlur p;
    Schedule wide;
    wide[p.blurred].vectorize(p.x, 16);
    std::string path = temp_dir() + "/blur.s";
    p.pipeline().compile_to_assembly(path, "blur512", wide, Target("x86-64-linux-avx512"));
    std::string s = read_file(path);
    EXPECT_TRUE(contains(s, "blur512:"));
    EXPECT_TRUE(contains(s, "zmm")) << "an AVX-512 target should use 512-bit registers";
    p.pipeline().compile_to_assembly(path, "blur_sse", wide, Target("x86-64-linux-sse41"));
    s = read_file(path);
    EXPECT_TRUE(contains(s, "blur_sse:"));
    EXPECT_FALSE(contains(s, "ymm"));
    EXPECT_FALSE(contains(s, "zmm"));
}

TEST(AOTFiles, LLVMIRDefinesTheFunctions) {
    loom_test::AotReduce p;
    std::string path = temp_dir() + "/reduce.ll";
    p.pipeline().compile_to_llvm_ir(path, "row_sums", p.schedule, Target("x86-64-linux-avx2"));
    std::string ir = read_file(path);
    EXPECT_TRUE(contains(ir, "define i32 @row_sums("));
    EXPECT_TRUE(contains(ir, "define i32 @row_sums_argv("));
    EXPECT_TRUE(contains(ir, "@row_sums_metadata("));
    EXPECT_TRUE(contains(ir, "x86-64-v3")) << "a portable object names a generic CPU";
}

TEST(AOTFiles, StaticLibraryHoldsPipelineAndRuntime) {
    loom_test::AotHalf p;
    std::string base = temp_dir() + "/libhalf";
    p.pipeline().compile_to_static_library(base, "half_fn", p.schedule);
    std::string a = read_file(base + ".a");
    EXPECT_EQ(a.substr(0, 8), "!<arch>\n");
    for (const char *member : {"half_fn.o", "loom_error.o", "loom_thread_pool.o", "loom_memory.o",
                               "loom_half.o", "loom_dlpack.o"}) {
        EXPECT_TRUE(contains(a, member)) << member;
    }
    for (const char *sym : {"half_fn", "half_fn_argv", "half_fn_metadata",
                            "loom_buffer_from_dltensor", "loom_set_error_handler"}) {
        EXPECT_TRUE(has_symbol_name(a, sym)) << sym;
    }
    std::string h = read_file(base + ".h");
    EXPECT_TRUE(contains(h, "int half_fn(loom_buffer_t *q"));
}

TEST(AOTFiles, BadFunctionNames) {
    loom_test::AotBlur p;
    std::string path = temp_dir() + "/bad.o";
    EXPECT_TRUE(throws_with<CompileError>(
        [&] { p.pipeline().compile_to_object(path, "2fast", p.schedule); },
        {"2fast", "C identifier"}));
    EXPECT_TRUE(throws_with<CompileError>(
        [&] { p.pipeline().compile_to_object(path, "memset", p.schedule); },
        {"memset", "runtime"}));
    EXPECT_TRUE(throws_with<CompileError>(
        [&] { p.pipeline().compile_to_header(path, "int", p.schedule); }, {"keyword"}));
    EXPECT_TRUE(throws_with<CompileError>(
        [&] { p.pipeline().compile_to_object("/nonexistent/dir/x.o", "fine", p.schedule); },
        {"Cannot open", "/nonexistent/dir/x.o"}));
}
