"""Who judges: the LLM judge over an OpenAI-compatible endpoint, and the built-in local judge."""
