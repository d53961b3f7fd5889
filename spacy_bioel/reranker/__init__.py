"""The `bioel_reranker` component: a cross-encoder that rescores the top-k
candidates an upstream linker wrote on each entity (issue 14)."""
