"""Judge metrics (RAGAS-style) over RAG samples, by an LLM over any OpenAI-compatible endpoint or the local judge."""
