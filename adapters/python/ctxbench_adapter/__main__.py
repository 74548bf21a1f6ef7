"""`python -m ctxbench_adapter ENGINE [--config JSON]`: serve ctxbench's external-engine protocol
on stdin/stdout with the real middleware. ENGINE is `deepagents` or `langchain`. `--config` gives
defaults for `begin.config` (the variant's `external.config` table wins key by key)."""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from .protocol import Channel, run

ENGINES = ("deepagents", "langchain")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m ctxbench_adapter", description=__doc__.split("\n\n")[0])
    ap.add_argument("engine", choices=ENGINES)
    ap.add_argument("--config", default="{}", help="JSON object: defaults for begin.config")
    args = ap.parse_args(argv)
    try:
        defaults = json.loads(args.config)
    except json.JSONDecodeError as exc:
        ap.error(f"--config: not JSON ({exc})")
    if not isinstance(defaults, dict):
        ap.error("--config: expected a JSON object")
    try:
        if args.engine == "deepagents":
            from .deepagents_engine import make
        else:
            from .langchain_engine import make
    except ImportError as exc:
        print(
            f"ctxbench_adapter: cannot import the {args.engine} stack ({exc}); install the adapter with "
            "`pip install adapters/python` (or run .ci/setup, which builds the pinned venv)",
            file=sys.stderr,
        )
        return 2

    def factory(begin: dict[str, Any], channel: Channel):  # noqa: ANN202
        cfg = dict(defaults)
        cfg.update(begin.get("config") or {})
        return make(dict(begin, config=cfg), channel)

    return run(factory)


if __name__ == "__main__":
    sys.exit(main())
