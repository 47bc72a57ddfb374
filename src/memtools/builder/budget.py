"""``--max-tokens`` / ``--max-cost``: stop a build before its model calls would pass a budget.

Before every new (not checkpointed) model call, the budget reserves what the call can cost at
most: its prompt (estimated from the text and frames) plus the ``max_tokens`` it may answer.
If the tokens spent so far plus that reservation would pass the limit, the call is not made
and ``BudgetExceeded`` stops the build. Every answered call is already checkpointed, so
running the same command again (with a larger budget) resumes where it stopped and pays only
for the calls still missing.

The budget of a run is set with ``spending_limit(budget)`` around the build (a context
variable, so any pipeline on that task sees it) and read by ``ModelCalls``.
"""

from __future__ import annotations

import contextlib
import contextvars
from collections.abc import Iterator
from dataclasses import dataclass, field

from memtools.costs import PriceTable, Tally, estimate_tokens
from memtools.errors import BuildError, ConfigError

_current: contextvars.ContextVar[Budget | None] = contextvars.ContextVar("memtools_budget", default=None)


class BudgetExceeded(BuildError):
    """The next model call could pass ``--max-tokens`` / ``--max-cost``; the build stopped before it."""


@dataclass
class Budget:
    max_tokens: int | None = None
    max_cost: float | None = None
    model: str = ""
    prices: PriceTable = field(default_factory=lambda: PriceTable({}))
    spent: Tally = field(default_factory=Tally)
    _reserved: int = 0

    def __post_init__(self) -> None:
        if self.max_cost is not None and self.prices.prices.get(self.model) is None:
            raise ConfigError(f"--max-cost needs a price for {self.model!r} (genai-prices' table has none): add "
                              f"[models.\"{self.model}\"] "
                              "input = ..., output = ... (dollars per million tokens) to prices.toml in the memory, "
                              "$MEMTOOLS_PRICES or --prices FILE")

    def _cost(self, tokens_in: int, tokens_out: int) -> float:
        price_in, price_out = self.prices.prices[self.model]
        return (tokens_in * price_in + tokens_out * price_out) / 1e6

    def admit(self, prompt: str, frames: int, max_answer_tokens: int) -> tuple[int, int]:
        """Reserve the most the next call can cost, or raise ``BudgetExceeded``. Returns the reservation."""
        tokens_in, tokens_out = estimate_tokens(prompt, frames), max_answer_tokens
        spent_in, spent_out = self.spent.tokens_in + self._reserved, self.spent.tokens_out
        if self.max_tokens is not None and spent_in + spent_out + tokens_in + tokens_out > self.max_tokens:
            raise BudgetExceeded(f"stopped before passing --max-tokens {self.max_tokens:,}: {self.summary()} spent, "
                                 f"the next call may use up to {tokens_in + tokens_out:,} more")
        if self.max_cost is not None and self._cost(spent_in + tokens_in, spent_out + tokens_out) > self.max_cost:
            raise BudgetExceeded(f"stopped before passing --max-cost ${self.max_cost:g}: {self.summary()} spent, "
                                 f"the next call may cost up to ${self._cost(tokens_in, tokens_out):.4f} more")
        self._reserved += tokens_in + tokens_out
        return tokens_in, tokens_out

    def release(self, reservation: tuple[int, int]) -> None:
        """The call answered (its usage goes to ``spent``) or failed: free what ``admit`` reserved."""
        self._reserved -= sum(reservation)

    def summary(self) -> str:
        text = f"{self.spent.tokens:,} tokens in {self.spent.calls} call(s)"
        if self.prices.prices.get(self.model) is not None:
            text += f" (${self._cost(self.spent.tokens_in, self.spent.tokens_out):.4f})"
        return text + (" (estimated)" if self.spent.estimated else "")


def current_budget() -> Budget | None:
    return _current.get()


@contextlib.contextmanager
def spending_limit(budget: Budget | None) -> Iterator[Budget | None]:
    token = _current.set(budget)
    try:
        yield budget
    finally:
        _current.reset(token)
