"""Offline text metrics (BLEU-4, ROUGE-L, METEOR, CIDEr, BERTScore, length, random) and their
agreement with human pairwise majorities. Each metric is one module; ``registry`` lists them."""
