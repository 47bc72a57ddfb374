"""What a memory cost: tokens per model call, per stage and per video, and money from a price table.

Where the numbers come from:

* every vision-model call of a build is already checkpointed under
  ``work/<video>/calls/<stage>/<step>-a<attempt>.json`` with the model's name and usage;
* any other model call (speech, embeddings over HTTP, ...) is recorded with
  ``record(memory_path, stage, model, usage, video_id=...)``, one JSON line in
  ``work/<video>/usage.jsonl`` (``work/_other/usage.jsonl`` without a video).

``usage`` is the response's own usage object (OpenAI ``prompt_tokens``/``completion_tokens``,
LangChain/Anthropic ``input_tokens``/``output_tokens``). When a server sends none, tokens are
estimated from the text (about four characters a token, plus a flat amount per image) and
every total built on an estimate says so.

Prices come from two places, the user's first (``PriceTable.load``):

* a file the user writes (``--prices FILE``, ``$MEMTOOLS_PRICES``, or ``prices.toml`` /
  ``prices.json`` in the memory folder); its entry for a model always wins::

      [models."gpt-4o-mini"]        # US dollars per million tokens
      input = 0.15
      output = 0.60

* else the maintained table of the ``genai-prices`` package (pydantic's, released about monthly):
  its data ships inside the installed package and is read from there, never fetched
  (``genai_prices.UpdatePrices`` is not used). A model it does not know (a local or self-served
  model, a replay) has no price, as before; ``pip install -U genai-prices`` brings newer prices.
  Every priced total names where its price came from (``PriceTable.source_of``).
"""

from __future__ import annotations

import json
import os
import sys
import threading
from collections import defaultdict
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Any

from memtools.errors import ConfigError

if sys.version_info >= (3, 11):
    import tomllib
else:  # a dependency on Python 3.10 (pyproject.toml)
    import tomli as tomllib

CHARS_PER_TOKEN = 4
IMAGE_TOKENS = 765  # a 512x512-ish frame in OpenAI's accounting; only used when a server reports no usage
OTHER = "_other"
PRICES_ENV = "MEMTOOLS_PRICES"
MAINTAINED = "genai-prices"
_lock = threading.Lock()
_STAGE_OF_STEP = {"window": "segment", "macro": "extract", "chunk": "aggregate", "root": "aggregate"}  # old records


def estimate_tokens(text: str, images: int = 0) -> int:
    """A model-free estimate: about four characters per token, plus ``IMAGE_TOKENS`` per image."""
    return (len(text) + CHARS_PER_TOKEN - 1) // CHARS_PER_TOKEN + images * IMAGE_TOKENS


def tokens_from_usage(usage: Mapping[str, Any] | None, prompt_text: str = "", completion_text: str = "",
                      images: int = 0) -> tuple[int, int, bool]:
    """``(tokens_in, tokens_out, estimated)`` from a response's usage, estimated from the texts when absent."""
    usage = usage or {}
    tokens_in = usage.get("prompt_tokens", usage.get("input_tokens"))
    tokens_out = usage.get("completion_tokens", usage.get("output_tokens", 0 if tokens_in is not None else None))
    if tokens_in is None:
        return estimate_tokens(prompt_text, images), estimate_tokens(completion_text), True
    return int(tokens_in), int(tokens_out or 0), False


@dataclass
class Tally:
    calls: int = 0
    tokens_in: int = 0
    tokens_out: int = 0
    estimated: bool = False

    def add(self, tokens_in: int, tokens_out: int, estimated: bool, calls: int = 1) -> None:
        self.calls += calls
        self.tokens_in += tokens_in
        self.tokens_out += tokens_out
        self.estimated = self.estimated or estimated

    @property
    def tokens(self) -> int:
        return self.tokens_in + self.tokens_out


def record(memory_path: str | os.PathLike, stage: str, model: str, usage: Mapping[str, Any] | None, *,
           video_id: str | None = None, prompt_text: str = "", completion_text: str = "", images: int = 0) -> Tally:
    """Record one model call (the hook for speech, HTTP embeddings and any new stage). Returns its tally."""
    tokens_in, tokens_out, estimated = tokens_from_usage(usage, prompt_text, completion_text, images)
    folder = Path(memory_path) / "work" / (video_id or OTHER)
    line = json.dumps({"stage": stage, "model": model, "tokens_in": tokens_in, "tokens_out": tokens_out,
                       "estimated": estimated})
    with _lock:
        folder.mkdir(parents=True, exist_ok=True)
        with (folder / "usage.jsonl").open("a", encoding="utf-8") as out:
            out.write(line + "\n")
    tally = Tally()
    tally.add(tokens_in, tokens_out, estimated)
    return tally


@dataclass
class CostRow:
    video_id: str
    stage: str
    model: str
    tally: Tally = field(default_factory=Tally)


def collect(memory_path: str | os.PathLike) -> list[CostRow]:
    """Every recorded model call of a memory, summed per (video, stage, model)."""
    rows: dict[tuple[str, str, str], CostRow] = {}

    def add(video: str, stage: str, model: str, tokens_in: int, tokens_out: int, estimated: bool) -> None:
        key = (video, stage, model or "unknown")
        row = rows.setdefault(key, CostRow(*key))
        row.tally.add(tokens_in, tokens_out, estimated)

    work = Path(memory_path) / "work"
    for folder in sorted(p for p in work.glob("*") if p.is_dir()) if work.is_dir() else []:
        calls = folder / "calls"
        for path in sorted(calls.rglob("*.json")) if calls.is_dir() else []:
            try:
                data = json.loads(path.read_text(encoding="utf-8"))
            except (OSError, ValueError):
                continue
            usage = data.get("usage") or {}
            stage = str(data.get("stage") or _STAGE_OF_STEP.get(path.name.split("_")[0], "model"))
            add(folder.name, stage, str(data.get("model") or ""), int(usage.get("prompt_tokens") or 0),
                int(usage.get("completion_tokens") or 0), bool(data.get("estimated")))
        log = folder / "usage.jsonl"
        for line in log.read_text(encoding="utf-8").splitlines() if log.is_file() else []:
            try:
                item = json.loads(line)
                add(folder.name, str(item["stage"]), str(item["model"]), int(item["tokens_in"]),
                    int(item["tokens_out"]), bool(item.get("estimated")))
            except (ValueError, KeyError, TypeError):
                continue  # a line cut short by a kill
    return list(rows.values())


@lru_cache(maxsize=256)
def maintained_price(model: str) -> tuple[float, float, str] | None:
    """``(input, output, what)`` for ``model`` from genai-prices' bundled table: US dollars per million tokens and
    the provider and model it matched (``"openai gpt-4o-mini"``); None for a model it does not know, or without it.

    Priced at a thousand tokens each way and scaled, so a model with tiers gets the price of a call's size, not of
    a million-token prompt's. Reads the data in the installed package; nothing is fetched."""
    if not model or model == "unknown" or ":" in model:  # "replay:...", "python:...": no hosted model
        return None
    try:
        from genai_prices import Usage, calc_price
    except ImportError:  # Python 3.10 gets an older release; a stripped install may have none
        return None
    try:
        found = calc_price(Usage(input_tokens=1000, output_tokens=1000), model)
    except (LookupError, ValueError):
        return None
    return (float(found.input_price) * 1000, float(found.output_price) * 1000,
            f"{found.provider.id} {found.model.id}")


def maintained_version() -> str:
    """``genai-prices 0.2.5``: the maintained table's package and version ("" when it is not installed)."""
    from importlib.metadata import PackageNotFoundError, version

    try:
        return f"{MAINTAINED} {version(MAINTAINED)}"
    except PackageNotFoundError:
        return ""


class Prices(Mapping[str, tuple[float, float]]):
    """A model's (input, output) price: the user's entry, else the maintained table's (when asked for). Iterating
    gives the user's models only (the maintained table is looked up by name, not listed)."""

    def __init__(self, user: Mapping[str, tuple[float, float]], maintained: bool) -> None:
        self.user, self.maintained = dict(user), maintained

    def __getitem__(self, model: str) -> tuple[float, float]:
        if model in self.user:
            return self.user[model]
        found = maintained_price(model) if self.maintained else None
        if found is None:
            raise KeyError(model)
        return found[0], found[1]

    def __contains__(self, model: object) -> bool:
        return isinstance(model, str) and self.get(model) is not None

    def __iter__(self) -> Iterator[str]:
        return iter(self.user)

    def __len__(self) -> int:
        return len(self.user)


class PriceTable:
    """US dollars per million input / output tokens, per model name: the user's file, else (``maintained``) the
    genai-prices table. ``PriceTable.load`` gives both; a table made by hand has only what it is given."""

    def __init__(self, prices: Mapping[str, tuple[float, float]], source: str = "", *,
                 maintained: bool = False) -> None:
        self.prices = Prices(prices, maintained)
        self.source = source

    def source_of(self, model: str) -> str:
        """Where ``model``'s price comes from: the user's file, ``genai-prices 0.2.5 (openai gpt-4o-mini)``, or ""."""
        if model in self.prices.user:
            return self.source or "the given price table"
        found = maintained_price(model) if self.prices.maintained else None
        return f"{maintained_version()} ({found[2]})" if found is not None else ""

    @classmethod
    def load(cls, memory_path: str | os.PathLike | None = None, path: str | os.PathLike | None = None) -> PriceTable:
        """From ``path``, else ``$MEMTOOLS_PRICES``, else ``prices.toml``/``prices.json`` in the memory (or none);
        the models it does not name are priced from the maintained table (genai-prices)."""
        chosen = path or os.environ.get(PRICES_ENV)
        if chosen is None and memory_path is not None:
            chosen = next((Path(memory_path) / n for n in ("prices.toml", "prices.json")
                           if (Path(memory_path) / n).is_file()), None)
        if chosen is None:
            return cls({}, maintained=True)
        chosen = Path(chosen)
        try:
            text = chosen.read_text(encoding="utf-8")
            if chosen.suffix == ".toml":
                data = tomllib.loads(text)
            else:
                data = json.loads(text)
        except (OSError, ValueError) as exc:
            raise ConfigError(f"cannot read the price table {chosen}: {exc}") from exc
        models = data.get("models") if isinstance(data, dict) else None
        if not isinstance(models, dict):
            raise ConfigError(f"{chosen}: expected a 'models' table: [models.\"NAME\"] input = 0.15, output = 0.60 "
                              "(US dollars per million tokens)")
        prices = {}
        for name, entry in models.items():
            try:
                prices[str(name)] = (float(entry["input"]), float(entry.get("output", entry["input"])))
            except (TypeError, KeyError, ValueError) as exc:
                raise ConfigError(f"{chosen}: model {name!r} needs numbers 'input' and 'output' "
                                  f"(dollars per million tokens): {exc}") from exc
        return cls(prices, str(chosen), maintained=True)

    def cost(self, model: str, tally: Tally) -> float | None:
        price = self.prices.get(model)
        if price is None:
            return None
        return (tally.tokens_in * price[0] + tally.tokens_out * price[1]) / 1e6


def render_costs(rows: Iterable[CostRow], prices: PriceTable) -> str:
    """Per-video totals (tokens, money where every model has a price), then the total per model."""
    rows = list(rows)
    if not rows:
        return "No model calls recorded (caption and MEMDREAMER imports call no model)."
    by_video: dict[str, list[CostRow]] = defaultdict(list)
    for row in rows:
        by_video[row.video_id].append(row)
    lines = ["video                              calls   tokens in  tokens out   cost"]
    total, unpriced = 0.0, set[str]()

    def money(items: list[CostRow]) -> str:
        costs = [prices.cost(r.model, r.tally) for r in items]
        unpriced.update(r.model for r, c in zip(items, costs, strict=True) if c is None)
        known = sum(c for c in costs if c is not None)
        return f"${known:.4f}" + ("" if all(c is not None for c in costs) else " + unpriced")

    for video, items in sorted(by_video.items()):
        t = Tally()
        for r in items:
            t.add(r.tally.tokens_in, r.tally.tokens_out, r.tally.estimated, r.tally.calls)
        flag = " (estimated)" if t.estimated else ""
        lines.append(f"{video:<34} {t.calls:>5} {t.tokens_in:>11,} {t.tokens_out:>11,}   {money(items)}{flag}")
        stages = ", ".join(f"{r.stage} {r.tally.tokens:,}" for r in sorted(items, key=lambda r: r.stage))
        lines.append(f"    by stage: {stages}")
    by_model: dict[str, Tally] = defaultdict(Tally)
    for r in rows:
        by_model[r.model].add(r.tally.tokens_in, r.tally.tokens_out, r.tally.estimated, r.tally.calls)
    lines.append("total per model:")
    for model, t in sorted(by_model.items()):
        cost = prices.cost(model, t)
        total += cost or 0.0
        shown = f"${cost:.4f} ({prices.source_of(model)})" if cost is not None else "no price"
        flag = " (estimated)" if t.estimated else ""
        lines.append(f"  {model}: {t.calls} call(s), {t.tokens_in:,} in + {t.tokens_out:,} out = {shown}{flag}")
    lines.append(f"TOTAL ${total:.4f}" + (f" (no price for {', '.join(sorted(unpriced))})" if unpriced else ""))
    if unpriced and not prices.source:
        lines.append(f"No price table: write prices.toml in the memory folder, set ${PRICES_ENV} or pass "
                     "--prices FILE ([models.\"NAME\"] input = ..., output = ... dollars per million tokens).")
    return "\n".join(lines)
