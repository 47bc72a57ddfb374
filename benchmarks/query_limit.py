"""How close one query's embedding comes to what this machine can do (issue 34).

    python benchmarks/query_limit.py [--queries 200] [--repeats 30] [--compare]
    python benchmarks/query_limit.py --synthetic     # a machine without memtools' dependencies or the weights

Measures, on the machine it runs on and with the numpy/OpenBLAS it runs with:

* the peak float32 GFLOP/s of the lone-query path's own products (MiniLM: hidden 384,
  intermediate 1536, six layers, a query's median token count), weights already in cache, on one
  BLAS thread and on all of them, and a large (1024^3) product for reference;
* the same products as the int16 path runs them (widen the codes, then the float32 product);
* memory bandwidth (a 256 MB numpy copy: bytes read + written per second);
* the lone query (``embed_query``'s path: tokenise, the int16 layers, one BLAS thread) and the
  float32 encoder's batch of one, each a median over distinct queries, with where the time goes
  (tokenising, the products, the rest: attention, LayerNorms, GELU, numpy's per-call overhead).

``--compare`` also times, alternated query by query in one run, the ways one query could be
embedded (the int16 and float32 layers, each on one BLAS thread and on the BLAS's default
threads), as the choice among them must hold on this CPU.

It prints the lone query's time as a multiple of its roofline limit, ``max(flops / peak,
weight bytes / bandwidth)``: the time no execution of this model on this machine can beat with
these weights (the peak is the best this machine did for the same shapes). Prints the CPU model
(``lscpu``), the load average, numpy's version and SIMD features, and threadpoolctl's view of the
BLAS (library, kernel architecture, threads), and the OpenBLAS/numpy environment variables.

``--synthetic`` runs the same arithmetic on random weights of MiniLM's shapes (``bert_query``'s int16
path, the real code, loaded without memtools' package imports: numpy and threadpoolctl are all it
needs), for a machine that has neither memtools' dependencies nor the weights: tokenising and the
float32 encoder are left out, the rest is timed as above.

To emulate another machine, run it under ``OPENBLAS_CORETYPE=Haswell`` (or SandyBridge, ...),
``NPY_DISABLE_CPU_FEATURES="X86_V4 AVX512_ICL"``, ``OPENBLAS_NUM_THREADS=1``.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import load_average, offline, usable_cpus  # noqa: E402

# a layer tuple's four weight matrices (QKV, attention output, FFN in, FFN out); each one's bias follows it
WEIGHTS = (0, 2, 5, 7)

QUERIES = [
    "a man is playing the guitar on a stage", "the woman pours milk into the bowl",
    "a dog catches a frisbee in the park", "people are dancing at a wedding",
    "he lifts the barbell over his head", "a child rides a bike down the street",
    "the chef slices onions on a cutting board", "two teams play volleyball on the beach",
    "she brushes the horse's mane", "a man shovels snow from the driveway",
    "the girl does a cartwheel on the grass", "someone wraps a present with red paper",
]


def cpu_model() -> str:
    try:
        out = subprocess.run(["lscpu"], capture_output=True, text=True, timeout=10).stdout
    except (OSError, subprocess.SubprocessError):
        return "unknown (no lscpu)"
    for line in out.splitlines():
        if line.startswith("Model name:"):
            return line.split(":", 1)[1].strip()
    return "unknown"


def synthetic_bert(seed: int = 0):
    """A ``NumpyBert`` of MiniLM-L6's shapes (hidden 384, 12 heads, intermediate 1536, six layers) with random
    weights and no tokenizer: its own float32 forward and int16 query path run on it. The arithmetic, not the
    answers, is what is timed."""
    from memtools.embed.bert_numpy import NumpyBert

    class SyntheticBert(NumpyBert):
        dim, heads, inner, vocab, eps, pad_id, max_length = 384, 12, 1536, 30522, 1e-12, 0, 256

        def __init__(self) -> None:  # noqa: D107 - no model folder
            rng = np.random.default_rng(seed)

            def w(*shape: int) -> np.ndarray:
                return rng.standard_normal(shape, dtype=np.float32) * np.float32(0.05)

            d, inner = self.dim, self.inner
            norm = (np.ones(d, np.float32), np.zeros(d, np.float32))
            self.word, self.position, self.token_type, self.embed_norm = w(self.vocab, d), w(512, d), w(d), norm
            self.layers = [(w(d, 3 * d), w(3 * d), w(d, d), w(d), norm, w(d, inner), w(inner), w(inner, d), w(d),
                            norm) for _ in range(6)]
            self._query, self._query_threads = None, 0

    return SyntheticBert()


def bare_memtools() -> None:
    """Import memtools' modules from this checkout without running its packages' ``__init__`` (which load the
    storage engines): ``--synthetic`` needs only numpy and threadpoolctl."""
    import types

    src = Path(__file__).resolve().parents[1] / "src" / "memtools"
    for name, folder in (("memtools", src), ("memtools.embed", src / "embed")):
        if name not in sys.modules:
            module = types.ModuleType(name)
            module.__path__ = [str(folder)]
            sys.modules[name] = module


def random_ids(length: int, count: int) -> list[list[int]]:
    """``count`` token-id sequences of ``length`` ([CLS] ... [SEP]) for ``--synthetic``."""
    rng = np.random.default_rng(3)
    return [[101, *rng.integers(1000, 30000, length - 2).tolist(), 102] for _ in range(count)]


def synthetic_queries(model, length: int, count: int) -> tuple[float, float]:
    """(wall, CPU) median ms of ``count`` distinct random queries of ``length`` tokens by the path chosen on this
    machine (``embed_query``'s execution, less tokenising and the query cache)."""
    from memtools.blas import blas_threads

    wall, cpu = [], []
    with blas_threads(1):
        for ids in random_ids(length, count):
            start, start_cpu = time.perf_counter(), time.thread_time()
            model.encode_ids(ids)
            cpu.append(time.thread_time() - start_cpu)
            wall.append(time.perf_counter() - start)
    return statistics.median(wall) * 1e3, statistics.median(cpu) * 1e3


def roofline_ms(flops: float, weight_bytes: float, gflops: float, bytes_per_second: float) -> float:
    """The least time (ms) a pass can take: its arithmetic at the peak rate, or reading its weights
    once at the memory bandwidth, whichever is longer (weights already in cache only beat the
    second bound, so it is a lower bound for a cold cache and an estimate for a warm one)."""
    return max(flops / (gflops * 1e9), weight_bytes / bytes_per_second) * 1e3


def best(fn, repeats: int) -> float:
    """The fastest of ``repeats`` calls, in seconds: the machine's capability, not its load."""
    fn()
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return min(times)


def shapes(model, length: int) -> list[tuple[int, int, int]]:
    """(rows, in, out) of one layer's four products for a sequence of ``length`` tokens."""
    return [(length, *model.layers[0][i].shape) for i in WEIGHTS]


def product_rate(model, qweights, length: int, repeats: int) -> dict[str, float]:
    """GFLOP/s of one layer's four products, hot in cache: float32 and as the int16 path runs them."""
    rng = np.random.default_rng(0)
    layer, qlayer = model.layers[0], qweights.layers[0]
    float32, int16 = 0.0, 0.0
    flops = 0
    buffer = qweights._buffer()
    for weight, codes in ((layer[i], qlayer[i]) for i in WEIGHTS):
        x = rng.standard_normal((length, weight.shape[0]), dtype=np.float32)
        flops += 2 * length * weight.size
        float32 += best(lambda x=x, w=weight: x @ w, repeats)
        int16 += best(lambda x=x, c=codes: qweights._product(x, c, np.zeros(c.shape[1], np.float32), buffer), repeats)
    return {"float32": flops / float32 / 1e9, "int16": flops / int16 / 1e9}


def large_rate(repeats: int) -> float:
    a = np.random.default_rng(1).standard_normal((1024, 1024), dtype=np.float32)
    return 2 * 1024**3 / best(lambda: a @ a, max(3, repeats // 5)) / 1e9


def bandwidth(repeats: int) -> float:
    """Bytes read + written per second by a 256 MB copy (far larger than any L3)."""
    src = np.ones(64 * 2**20, dtype=np.float32)
    dst = np.empty_like(src)
    return 2 * src.nbytes / best(lambda: np.copyto(dst, src), max(5, repeats // 2))


def lone_queries(embedder, model, texts: list[str]) -> dict[str, tuple[float, float]]:
    """(wall, CPU) median ms per distinct query: embed_query (the lone-query path, with its lock,
    BLAS limit and tokeniser), the float32 encoder's batch of one, and tokenising alone. The CPU
    time (``thread_time``) counts only this thread's running: on a shared machine the wall time
    also counts the waits for a core."""
    from memtools.blas import blas_threads

    embedder._query_cache_size = 0  # every text is new to it
    runs = {"lone query": lambda text: embedder.embed_query(text),
            "float32 batch of one": lambda text: model.encode([text]),
            "tokenise": lambda text: model.tokenizer.encode(text)}
    wall: dict[str, list[float]] = {name: [] for name in runs}
    cpu: dict[str, list[float]] = {name: [] for name in runs}
    for text in texts:
        for name, run in runs.items():
            with blas_threads(1) if name != "lone query" else contextlib.nullcontext():
                start, start_cpu = time.perf_counter(), time.thread_time()
                run(text)
                cpu[name].append(time.thread_time() - start_cpu)
                wall[name].append(time.perf_counter() - start)
    return {name: (statistics.median(wall[name]) * 1e3, statistics.median(cpu[name]) * 1e3) for name in runs}


def products_in_a_query(qweights, length: int, texts: int) -> tuple[float, float]:
    """(wall, CPU) median ms of the 24 int16 products of one query (the layers' weights in turn,
    as a query reads them), on one BLAS thread."""
    from memtools.blas import blas_threads

    rng = np.random.default_rng(2)
    buffer = qweights._buffer()
    inputs = [rng.standard_normal((length, qweights.layers[0][i].shape[0]), dtype=np.float32) for i in WEIGHTS]
    wall, cpu = [], []
    with blas_threads(1):
        for _ in range(texts):
            start, start_cpu = time.perf_counter(), time.thread_time()
            for layer in qweights.layers:
                for x, i in zip(inputs, WEIGHTS, strict=True):
                    qweights._product(x, layer[i], layer[i + 1], buffer)
            cpu.append(time.thread_time() - start_cpu)
            wall.append(time.perf_counter() - start)
    return statistics.median(wall) * 1e3, statistics.median(cpu) * 1e3


def compare(model, queries: list[list[int]]) -> dict[str, tuple[float, float]]:
    """(wall, CPU) median ms per distinct query (token ids) of each way to embed it, alternated query by query
    (so the machine's load of the moment falls on all of them alike)."""
    from threadpoolctl import threadpool_limits

    qweights = model.query_weights()
    cpus = usable_cpus()
    ways = {"int16, 1 BLAS thread (default)": (qweights.encode, 1),
            f"int16, {cpus} BLAS threads": (qweights.encode, cpus),
            "float32, 1 BLAS thread": (lambda ids: model._forward([ids])[0], 1),
            f"float32, {cpus} BLAS threads": (lambda ids: model._forward([ids])[0], cpus)}
    wall: dict[str, list[float]] = {name: [] for name in ways}
    cpu: dict[str, list[float]] = {name: [] for name in ways}
    for ids in queries:
        for name, (run, threads) in ways.items():
            with threadpool_limits(limits=threads, user_api="blas"):
                start, start_cpu = time.perf_counter(), time.process_time()  # every thread's CPU: BLAS workers too
                run(ids)
                cpu[name].append(time.process_time() - start_cpu)
                wall[name].append(time.perf_counter() - start)
    return {name: (statistics.median(wall[name]) * 1e3, statistics.median(cpu[name]) * 1e3) for name in ways}


def simd() -> str:
    """numpy's SIMD extensions: baseline, and those found (*) or not (?) for its dispatched loops."""
    try:
        from numpy.lib._utils_impl import _opt_info  # numpy >= 2
    except ImportError:
        return "?"
    return ", ".join(_opt_info().split())


def blas_info() -> list[str]:
    try:
        from threadpoolctl import threadpool_info
    except ImportError:
        return ["threadpoolctl not installed"]
    return [f"{i.get('internal_api')} {i.get('version')} kernel={i.get('architecture')} threads={i.get('num_threads')} "
            f"({i.get('user_api')}, {Path(i.get('filepath', '')).name})" for i in threadpool_info()]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--queries", type=int, default=200, help="distinct queries timed (default 200)")
    parser.add_argument("--repeats", type=int, default=30, help="repeats of each peak measurement (best kept)")
    parser.add_argument("--compare", action="store_true",
                        help="also time the int16 and float32 layers on one and on all BLAS threads, alternated")
    parser.add_argument("--synthetic", action="store_true",
                        help="random weights of the model's shapes, without memtools' dependencies (see above)")
    parser.add_argument("--length", type=int, default=12, help="--synthetic: tokens per query (default 12)")
    args = parser.parse_args()
    offline()
    if args.synthetic:
        bare_memtools()
    from threadpoolctl import threadpool_limits

    from memtools.blas import blas_threads

    if args.synthetic:
        embedder, model = None, synthetic_bert()
        qweights, length, texts = model.query_weights(), args.length, []
        queries = random_ids(length, args.queries)
    else:
        from memtools.embed import default_embedder

        embedder = default_embedder()
        model = embedder._numpy_model()
        qweights = model.query_weights()
        lengths = sorted(len(model.tokenizer.encode(embedder.query_prefix + t).ids) for t in QUERIES)
        length = lengths[len(lengths) // 2]
        texts = [f"{QUERIES[n % len(QUERIES)]} {n}" for n in range(args.queries)]
        queries = [model.tokenizer.encode(embedder.query_prefix + t).ids for t in texts]

    print(f"CPU: {cpu_model()}; {usable_cpus()} usable CPUs of {os.cpu_count()}; load average {load_average()}")
    print(f"numpy {np.__version__}; SIMD: {simd()}")
    for line in blas_info():
        print(f"BLAS: {line}")
    for var in ("OPENBLAS_NUM_THREADS", "OPENBLAS_CORETYPE", "OPENBLAS_L2_SIZE", "NPY_DISABLE_CPU_FEATURES",
                "OMP_NUM_THREADS"):
        if var in os.environ:
            print(f"env: {var}={os.environ[var]}")

    flops = sum(2 * rows * k * n for rows, k, n in shapes(model, length)) * len(model.layers)
    weights32 = sum(w.nbytes for layer in model.layers for w in (layer[i] for i in WEIGHTS))
    weights16 = sum(m.codes.nbytes + m.scale.nbytes for layer in qweights.layers for m in (layer[i] for i in WEIGHTS))
    with blas_threads(1):
        one = product_rate(model, qweights, length, args.repeats)
        large_one = large_rate(args.repeats)
    with threadpool_limits(limits=usable_cpus(), user_api="blas"):
        many = product_rate(model, qweights, length, args.repeats)
        large_many = large_rate(args.repeats)
    bw = bandwidth(args.repeats)
    peak = max(one["float32"], many["float32"])
    if args.synthetic:
        times = {"lone query": synthetic_queries(model, length, args.queries)}
    else:
        times = lone_queries(embedder, model, texts)
    products = products_in_a_query(qweights, length, min(args.queries, 100))

    source = "random weights of the model's shapes (--synthetic)" if args.synthetic else \
        f"median of {len(QUERIES)} typical queries"
    print(f"\nquery: {length} tokens ({source}); {flops / 1e6:.0f} MFLOP "
          f"for the six layers; weights read {weights32 / 1e6:.1f} MB as float32, {weights16 / 1e6:.1f} MB as int16\n")
    print("| measure | 1 BLAS thread | all BLAS threads |")
    print("|---|---|---|")
    print(f"| query shapes, float32, hot (GFLOP/s) | {one['float32']:.1f} | {many['float32']:.1f} |")
    print(f"| query shapes, int16 path (widen + product), hot (GFLOP/s) | {one['int16']:.1f} | {many['int16']:.1f} |")
    print(f"| 1024^3 float32 product (GFLOP/s) | {large_one:.1f} | {large_many:.1f} |")
    print(f"| memory bandwidth, 256 MB copy (GB/s) | {bw / 1e9:.1f} | |")

    limit32 = roofline_ms(flops, weights32, peak, bw)
    limit16 = roofline_ms(flops, weights16, peak, bw)
    print(f"\nroofline limit: float32 weights {limit32:.2f} ms, int16 weights {limit16:.2f} ms "
          f"(max(flops / {peak:.1f} GFLOP/s, weight bytes / {bw / 1e9:.1f} GB/s))\n")
    print("| path (median over distinct queries) | wall ms | x limit | CPU ms | x limit |")
    print("|---|---|---|---|---|")
    chosen = f"float32 on {model._query_threads} BLAS threads" if model._query_threads else "int16, 1 BLAS thread"
    print(f"lone-query path chosen here (memtools.embed.query_path): {chosen}\n")
    limit_chosen = limit32 if model._query_threads else limit16  # the weights the chosen path reads
    for name, label, limit in (("lone query", f"lone query (embed_query: {chosen})", limit_chosen),
                               ("float32 batch of one", "float32 encoder, batch of one (1 BLAS thread)", limit32)):
        if name in times:
            wall, cpu = times[name]
            print(f"| {label} | {wall:.2f} | {wall / limit:.2f} | {cpu:.2f} | {cpu / limit:.2f} |")
    tokenise = times.get("tokenise", (0.0, 0.0))
    if "tokenise" in times:
        print(f"| of the lone query: tokenising | {tokenise[0]:.3f} | | {tokenise[1]:.3f} | |")
    print(f"| of the lone query: its 24 products (int16) | {products[0]:.2f} | | {products[1]:.2f} | |")
    rest = [times["lone query"][n] - tokenise[n] - products[n] for n in (0, 1)]
    print(f"| of the lone query: the rest (attention, norms, GELU, calls) | {rest[0]:.2f} | | {rest[1]:.2f} | |")
    if args.compare:
        print("\n| way to embed one query (alternated, median over distinct queries) | wall ms | x limit | "
              "CPU ms (all threads) | x limit |")
        print("|---|---|---|---|---|")
        for name, (wall, cpu) in compare(model, queries).items():
            print(f"| {name} | {wall:.2f} | {wall / limit16:.2f} | {cpu:.2f} | {cpu / limit16:.2f} |")
    wall, cpu = times["lone query"]
    print(f"\nLONE QUERY {wall:.2f} ms wall = {wall / limit_chosen:.2f} x the limit ({limit_chosen:.2f} ms), CPU "
          f"{cpu:.2f} ms = {cpu / limit_chosen:.2f} x, by {chosen}, on {cpu_model()}, load {load_average()}")

if __name__ == "__main__":
    main()
