"""The LLM pairwise judge (VisIT-Bench "GPT4-no-ref" / "GPT4-ref"): both orderings of every pair,
a verdict per query, a cheaper model extracting unclear verdicts, the battle by the two-query rule.
``verdicts`` is the pure core; ``prompts`` the versioned templates; ``services`` runs and stores."""
