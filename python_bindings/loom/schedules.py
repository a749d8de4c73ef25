"""The schedule templates of schedules/ (the same C++): flash_attention,
flash_decoding, their GPU forms (on CUDA cores, and flash_attention_tensor_cores
and flash_decoding_tensor_cores as tile programs on tensor cores), the materialized baseline, and
gemm_tensor_cores (a matrix product as a tensor-core tile program). Options are
keyword arguments, e.g. flash_attention(sch, chain, query_block=32)."""
from ._loom import schedules as _templates

AttentionChain = _templates.AttentionChain
FlashAttentionOptions = _templates.FlashAttentionOptions
FlashDecodingOptions = _templates.FlashDecodingOptions
FlashAttentionGpuOptions = _templates.FlashAttentionGpuOptions
FlashDecodingGpuOptions = _templates.FlashDecodingGpuOptions
FlashAttentionTensorCoreOptions = _templates.FlashAttentionTensorCoreOptions
FlashDecodingTensorCoreOptions = _templates.FlashDecodingTensorCoreOptions
flash_attention = _templates.flash_attention
flash_decoding = _templates.flash_decoding
flash_attention_gpu = _templates.flash_attention_gpu
flash_decoding_gpu = _templates.flash_decoding_gpu
flash_attention_tensor_cores = _templates.flash_attention_tensor_cores
flash_decoding_tensor_cores = _templates.flash_decoding_tensor_cores
materialized_attention = _templates.materialized_attention
gemm_tensor_cores = _templates.gemm_tensor_cores
