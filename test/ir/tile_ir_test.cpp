// The tile IR (src/tile/TileIR.h): a GEMM's block program, staged through
// shared memory with async copies, verified and printed with its layouts;
// the verifier's refusals.
#include <gtest/gtest.h>

#include "loom/Error.h"
#include "loom/IROperator.h"
#include "tile/TileIR.h"
#include "tile_programs.h"

using namespace loom;
using namespace loom::internal;
using namespace loom::internal::tile;

namespace {

TileProgram gemm_program() {
    return loom_test::gemm_program(Float(16), cast(Float(16), Variable::make(Float(32), "_0")));
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
              "    barrier\n"
              "    %a = convert_layout %a_s : float16[16x16] #mma_a\n"
              "    %b = convert_layout %b_s : float16[16x8] #mma_b\n"
              "    %acc = dot %a, %b, %acc : float32[16x8] #mma_accumulator\n"
              "    barrier\n"
              "  %c = map(float16(_0)) %acc : float16[16x8] #mma_accumulator\n"
              "  store C[(bm * 16), (bn * 8)] %c masked past (M, N)\n");
}

TEST(TileIR, VerifierRefusesMismatches) {
    {
        TileProgram p = gemm_program();
        // B's tile is 16 x 8; a dot that reads it as 8 x 8 does not fit A.
        TileLoop &loop = *p.body[1].loop;
        for (int i : {1, 6}) {  // B's copy and its conversion
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
