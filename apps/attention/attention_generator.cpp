// The plain attention of attention.h as a generator: the algorithm comes from
// attention::Attention, the Inputs and the Output bind to it, the element
// type of q, k, v and the output is a GeneratorParam (float16 or float32;
// the arithmetic is float32 either way), and so are the schedule (the
// materialized softmax, FlashAttention with rolling_update, or
// FlashDecoding with split_k: schedules/flash_attention.h) and its sizes.
//
//     loom_add_generator(attention_generator SOURCES attention_generator.cpp)
//     loom_add_library(attention_f16 GENERATOR attention_generator PARAMS elem=float16)
//
// attention_f16(q, k, v, scale, out): q and out are [batch, heads, seq_q,
// head_dim], k and v [batch, heads, seq_k, head_dim].
#include <memory>

#include <loom/loom.h>

#include "../../schedules/flash_attention.h"
#include "attention.h"

namespace {

using namespace loom;

/** How the softmax chain is computed. */
enum class AttentionSchedule { Materialized, Flash, Decode };

class AttentionGenerator : public Generator {
  public:
    GeneratorParam<Type> elem{"elem", Float(32)};
    GeneratorParam<AttentionSchedule> schedule_kind{
        "schedule",
        AttentionSchedule::Materialized,
        {{"materialized", AttentionSchedule::Materialized},
         {"flash", AttentionSchedule::Flash},
         {"decode", AttentionSchedule::Decode}}};
    GeneratorParam<int> query_block{"query_block", 16, 1, 4096};
    GeneratorParam<int> vector{"vector", 8, 1, 64};
    // flash and decode: keys per rolling step; decode: chunks in parallel.
    GeneratorParam<int> key_tile{"key_tile", 64, 1, 4096};
    GeneratorParam<int> chunks{"chunks", 16, 1, 1 << 16};

    Input<Buffer<>> q{"q", elem, 4};
    Input<Buffer<>> k{"k", elem, 4};
    Input<Buffer<>> v{"v", elem, 4};
    Input<float> scale{"scale"};
    // Named like the Func it is bound to: a Func's name names its argument.
    Output<Buffer<>> out{"out", elem, 4};

    std::unique_ptr<attention::Attention> algo;

    void generate() override {
        // Only the float types make sense: the scores are float32 and the
        // output is cast back to the input type.
        user_assert(elem.value() == Float(16) || elem.value() == Float(32))
            << "attention: elem must be float16 or float32, not " << type_to_string(elem.value());
        algo =
            std::make_unique<attention::Attention>(q.param(), k.param(), v.param(), scale.param());
        out = algo->out;
    }
    void schedule() override {
        schedules::AttentionChain chain{algo->s, algo->p, algo->o, algo->out, algo->b,
                                        algo->h, algo->i, algo->j, algo->d,   algo->r};
        switch (schedule_kind.value()) {
        case AttentionSchedule::Materialized: algo->schedule_cpu(sched, query_block, vector); break;
        case AttentionSchedule::Flash:
            schedules::flash_attention(sched, chain, {query_block, key_tile, vector});
            break;
        case AttentionSchedule::Decode:
            schedules::flash_decoding(sched, chain, {chunks, key_tile, vector});
            break;
        }
    }
};

}  // namespace

LOOM_REGISTER_GENERATOR(AttentionGenerator, attention)
