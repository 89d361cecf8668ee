"""The LLM host: providers, tool-call extraction, validated retries, safety limits and the chat loop."""
