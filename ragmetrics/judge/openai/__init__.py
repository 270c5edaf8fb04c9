"""The client for OpenAI-compatible endpoints: chat verdicts and embeddings."""
