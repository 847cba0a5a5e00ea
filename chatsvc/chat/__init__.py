"""One chat turn: context from the stores, the upstream LLM, the relay of its answer."""
