"""The cost options shared by commands: ``--prices`` (info --cost, build) and the build budget."""

from __future__ import annotations

import argparse
from pathlib import Path

from memtools.errors import ConfigError


def add_prices_arg(p: argparse.ArgumentParser | argparse._ArgumentGroup) -> None:
    p.add_argument("--prices", type=Path, metavar="FILE",
                   help="price table (TOML or JSON: [models.\"NAME\"] input = ..., output = ... dollars per million "
                        "tokens; default: $MEMTOOLS_PRICES, else prices.toml / prices.json in the memory)")


def add_budget_arguments(p: argparse.ArgumentParser) -> None:
    budget = p.add_argument_group("budget")
    budget.add_argument("--max-tokens", type=int, metavar="N",
                        help="stop before this run's model calls could pass N tokens (resumable)")
    budget.add_argument("--max-cost", type=float, metavar="USD",
                        help="stop before this run's model calls could cost more (needs a price table; resumable)")
    add_prices_arg(budget)


def budget_from_args(args: argparse.Namespace, memory_path: Path, model: str):
    """The run's ``Budget`` (None without --max-tokens / --max-cost)."""
    from memtools.builder.budget import Budget
    from memtools.costs import PriceTable

    if args.max_tokens is None and args.max_cost is None:
        return None
    if (args.max_tokens is not None and args.max_tokens <= 0) or (args.max_cost is not None and args.max_cost <= 0):
        raise ConfigError("--max-tokens and --max-cost must be positive")
    return Budget(max_tokens=args.max_tokens, max_cost=args.max_cost, model=model,
                  prices=PriceTable.load(memory_path, args.prices))
