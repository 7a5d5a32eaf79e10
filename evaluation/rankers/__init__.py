"""Model rankers for IRR: each turns review items into per-review scores (lower = better).

One interface (:class:`~evaluation.rankers.base.ReviewRanker`), several implementations:
uploaded scores, local perplexity (Hugging Face causal LM), server perplexity (prompt-token
log-probabilities from an OpenAI-compatible completions endpoint) and response-based ranking by
a chat model.
"""
