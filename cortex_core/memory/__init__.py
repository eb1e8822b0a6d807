"""Memory: segments of commit messages and sections of documents, code-aware words for the
lexical index, the static embedding model, spectral clustering, notes, and search (BM25 and
vectors fused by rank, with bounded priors)."""
