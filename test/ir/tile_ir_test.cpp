// The tile IR (src/tile/TileIR.h): a GEMM's block program, staged through
// shared memory with async copies, verified and printed with its layouts;
// the verifier's refusals.
#include <gtest/gtest.h>

#include "loom/Error.h"
#include "loom/IROperator.h"
#include "tile/TileIR.h"

using namespace loom;
using namespace loom::internal;
using namespace loom::internal::tile;

namespace {

TileStmt op(TileOp o) { return {std::make_shared<TileOp>(std::move(o)), nullptr}; }

TileType tile_type(Type t, std::vector<int> shape, LinearLayout layout, const std::string &name,
                   MemorySpace space = MemorySpace::Registers) {
    TileType ty;
    ty.elem = t;
    ty.shape = std::move(shape);
    ty.space = space;
    ty.layout = std::make_shared<const LinearLayout>(std::move(layout));
    ty.layout_name = name;
    return ty;
}

Expr var(const std::string &n) { return Variable::make(Int(32), n); }

/** One warp's 16 x 8 block of C = A B (f16 in, f32 out) over K in tiles of
 * 16: A and B copied asynchronously into swizzled shared memory, read
 * into mma fragments, multiplied, the f32 accumulator cast to f16 and
 * stored, masked at the matrix's edges. */
TileProgram gemm_program() {
    TileProgram p;
    p.name = "gemm";
    p.num_warps = 1;
    p.grid = {"bm", "bn"};
    const Type f16 = Float(16), f32 = Float(32);
    Expr M = var("M"), N = var("N"), K = var("K"), bm = var("bm"), bn = var("bn"), k = var("k");
    TileOp zeros{TileOpKind::Zeros, "acc",
                 tile_type(f32, {16, 8}, mma_m16n8k16_accumulator(), "mma_accumulator")};
    p.body.push_back(op(zeros));
    auto loop = std::make_shared<TileLoop>();
    loop->var = "k";
    loop->min = 0;
    loop->extent = (K + 15) / 16;
    TileOp copy_a{TileOpKind::AsyncCopy, "a_s",
                  tile_type(f16, {16, 16}, swizzled_shared_layout(16, 16, 2).invert(), "swizzled",
                            MemorySpace::Shared)};
    copy_a.buffer = "A";
    copy_a.origin = {bm * 16, k * 16};
    copy_a.bounds = {M, K};
    TileOp copy_b{TileOpKind::AsyncCopy, "b_s",
                  tile_type(f16, {16, 8}, swizzled_shared_layout(16, 8, 2).invert(), "swizzled",
                            MemorySpace::Shared)};
    copy_b.buffer = "B";
    copy_b.origin = {k * 16, bn * 8};
    copy_b.bounds = {K, N};
    TileOp commit{TileOpKind::AsyncCommit};
    TileOp wait{TileOpKind::AsyncWait};
    wait.pending = 0;
    TileOp a{TileOpKind::ConvertLayout,
             "a",
             tile_type(f16, {16, 16}, mma_m16n8k16_a(), "mma_a"),
             {"a_s"}};
    TileOp b{TileOpKind::ConvertLayout,
             "b",
             tile_type(f16, {16, 8}, mma_m16n8k16_b(), "mma_b"),
             {"b_s"}};
    TileOp dot{TileOpKind::Dot, "acc", zeros.type, {"a", "b", "acc"}};
    loop->body = {op(copy_a), op(copy_b), op(commit), op(wait), op(a), op(b), op(dot)};
    p.body.push_back({nullptr, loop});
    TileOp cast{TileOpKind::Map,
                "c",
                tile_type(f16, {16, 8}, mma_m16n8k16_accumulator(), "mma_accumulator"),
                {"acc"}};
    cast.fn = loom::cast(f16, Variable::make(f32, "_0"));
    TileOp store{TileOpKind::Store, "", {}, {"c"}};
    store.buffer = "C";
    store.origin = {bm * 16, bn * 8};
    store.bounds = {M, N};
    p.body.push_back(op(cast));
    p.body.push_back(op(store));
    return p;
}

}  // namespace

TEST(TileIR, GemmProgramVerifiesAndPrintsItsLayouts) {
    TileProgram p = gemm_program();
    verify(p);
    const std::string text = to_string(p);
    EXPECT_EQ(text,
              "tile_program gemm(num_warps=1) grid(bm, bn):\n"
              "  %acc = zeros : float32[16x8] #mma_accumulator\n"
              "  for k in [0, 0 + ((K + 15) / 16)):\n"
              "    %a_s = async_copy A[(bm * 16), (k * 16)] masked past (M, K) : "
              "float16[16x16] shared #swizzled\n"
              "    %b_s = async_copy B[(k * 16), (bn * 8)] masked past (K, N) : "
              "float16[16x8] shared #swizzled\n"
              "    async_commit\n"
              "    async_wait 0\n"
              "    %a = convert_layout %a_s : float16[16x16] #mma_a\n"
              "    %b = convert_layout %b_s : float16[16x8] #mma_b\n"
              "    %acc = dot %a, %b, %acc : float32[16x8] #mma_accumulator\n"
              "  %c = map(float16(_0)) %acc : float16[16x8] #mma_accumulator\n"
              "  store C[(bm * 16), (bn * 8)] %c masked past (M, N)\n");
}

TEST(TileIR, VerifierRefusesMismatches) {
    {
        TileProgram p = gemm_program();
        // B's tile is 16 x 8; a dot that reads it as 8 x 8 does not fit A.
        TileLoop &loop = *p.body[1].loop;
        for (int i : {1, 5}) {  // B's copy and its conversion
            loop.body[i].op->type.shape = {8, 8};
            loop.body[i].op->type.layout = nullptr;
        }
        try {
            verify(p);
            ADD_FAILURE() << "a dot of 16x16 by 8x8 was accepted";
        } catch (const InternalError &e) {
            EXPECT_NE(std::string(e.what()).find("dot acc: dot of 16x16 by 8x8 into 16x8"),
                      std::string::npos)
                << e.what();
        }
    }
    {
        TileProgram p = gemm_program();
        p.body[2].op->operands = {"accumulator"};
        try {
            verify(p);
            ADD_FAILURE() << "an undefined operand was accepted";
        } catch (const InternalError &e) {
            EXPECT_NE(std::string(e.what()).find(
                          "tile value accumulator is used by map c before it is defined"),
                      std::string::npos)
                << e.what();
        }
    }
    {
        TileProgram p = gemm_program();
        // A layout of 16 x 16 elements on a 16 x 8 tile.
        p.body[0].op->type.layout = std::make_shared<const LinearLayout>(mma_m16n8k16_a());
        EXPECT_THROW(verify(p), InternalError);
    }
}
