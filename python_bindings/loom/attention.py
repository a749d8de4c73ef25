"""The attention variants of apps/attention (the same C++ algorithms):
global, causal, ALiBi, soft-capping, sliding window and grouped-query, over
q, k, v of shape [batch, heads, seq, head_dim]."""
from ._loom import attention as _variants

Variant = _variants.Variant
AttentionVariant = _variants.AttentionVariant
variant_name = _variants.variant_name
soft_cap = _variants.soft_cap
