#!/usr/bin/env python3
"""Regenerates rust/model/data/prices.json, yuyao's price catalog, from litellm's own
model_prices_and_context_window.json (the one the installed `litellm` package ships, or a
path given as the first argument).

Kept: chat models of the major providers (OpenAI, Anthropic, Google Gemini, DeepSeek, Mistral,
xAI) with both an input and an output price; names without their provider prefix (the
catalog is matched on the bare model name). Usage: python3 scripts/price-catalog.py [json]
"""

import datetime
import json
import pathlib
import sys

PROVIDERS = ("openai", "anthropic", "gemini", "deepseek", "mistral", "xai")
OUT = pathlib.Path(__file__).resolve().parent.parent / "rust/model/data/prices.json"


def main() -> int:
    if len(sys.argv) > 1:
        source = pathlib.Path(sys.argv[1])
        version = "unknown"
    else:
        from importlib.metadata import version as dist_version

        import litellm  # noqa: F401 - only to find its data file

        source = (
            pathlib.Path(litellm.__file__).parent / "model_prices_and_context_window_backup.json"
        )
        version = dist_version("litellm")
    data = json.loads(source.read_text())
    models = {}
    for key, entry in sorted(data.items()):
        if not isinstance(entry, dict) or entry.get("mode") != "chat":
            continue
        if entry.get("litellm_provider") not in PROVIDERS or key.startswith("ft:"):
            continue
        price_in, price_out = entry.get("input_cost_per_token"), entry.get("output_cost_per_token")
        if not price_in or not price_out:  # free previews and unpriced entries say nothing
            continue
        name = key.split("/")[-1].lower()
        row = {"input_cost_per_token": price_in, "output_cost_per_token": price_out}
        for field in ("cache_read_input_token_cost", "cache_creation_input_token_cost"):
            if entry.get(field):
                row[field] = entry[field]
        if entry.get("max_input_tokens"):
            row["context_window"] = entry["max_input_tokens"]
        row["provider"] = entry["litellm_provider"]
        models.setdefault(name, row)
    document = {
        "_source": {
            "from": "litellm model_prices_and_context_window.json "
            "(https://github.com/BerriAI/litellm), as shipped in the litellm "
            f"{version} package",
            "retrieved": datetime.date.today().isoformat(),
            "units": "USD per token; context_window in input tokens",
        },
        "models": models,
    }
    OUT.write_text(json.dumps(document, indent=1, sort_keys=False) + "\n")
    print(f"{len(models)} models -> {OUT}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
