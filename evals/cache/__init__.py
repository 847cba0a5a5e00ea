"""Prompt-cache evaluation harness: what a prompt layout costs on each provider.

    python -m evals.cache --help

Replays the shipped scenarios through the real service against an upstream,
records every upstream request body, predicts cached tokens under each
provider's documented rules (providers.toml), names the cause of every miss and
writes a markdown report, a JSON file and PNG charts to evals/results/.
"""
