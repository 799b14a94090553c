"""The cost of serving over HTTP (issue 16): asks/s and p50/p95 latency at concurrency 1, 8 and 32 through
``kbgraph serve`` (a subprocess on 127.0.0.1, called with httpx) against in-process calls in the same run, and
the overhead ratio. No LLM: retrieval-only answers (PIKE-RAG §5.2.3 propagation plus evidence picking).

    .venv/bin/python benchmarks/serve.py [--corpus docs|2wiki] [--requests 96] [--levels 1,8,32]
        [--home DIR] [--uri bolt://...] [--llm-latency SECONDS]

The knowledge base is built (incrementally) under --home (default ~/.kbgraph-bench): ``serve-docs`` from
examples/docs, or ``serve-2wiki`` from the 2WikiMultiHopQA dev500 corpus. The in-process side goes through the
same ``KBPool`` as the server (one library call at a time per knowledge base, the connection being one), so the
ratio is what HTTP, JSON and the server add. Both sides warm up (embedder, query plans) before timing.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import httpx

from kbgraph.kb import KnowledgeBase
from kbgraph.serve.kbs import KBPool
from kbgraph.settings import Settings

EXAMPLES = Path(__file__).resolve().parents[1] / "examples"
DOCS_QUESTIONS = [
    "How many handgun checks were there in Kentucky in November 2015?",
    "What are the duties of a standing trustee?",
    "How many employees were affected by layoffs in Los Angeles?",
    "What does the FAA require of aviation maintenance technicians?",
    "What do ducks eat?",
    "How much did the Senate spend on official mail?",
    "What did the Federal Register notice amend?",
    "Who argued the case before the Supreme Court?",
]
WARMUP = 8


def questions(corpus: str, n: int) -> list[str]:
    if corpus == "docs":
        base = DOCS_QUESTIONS
    else:
        path = EXAMPLES / "multihop" / "2wikimultihopqa" / "dev500.questions.jsonl"
        base = [json.loads(line)["question"] for line in path.read_text(encoding="utf-8").splitlines()[:200]]
    return [base[i % len(base)] for i in range(n)]


def measure(call, qs: list[str], concurrency: int) -> dict:
    """Run ``call(q)`` for every question with ``concurrency`` threads: asks/s, p50/p95 (ms)."""
    def timed(q: str) -> float:
        t = time.perf_counter()
        call(q)
        return time.perf_counter() - t

    start = time.perf_counter()
    with ThreadPoolExecutor(concurrency) as pool:
        lat = sorted(pool.map(timed, qs))
    wall = time.perf_counter() - start
    p95 = lat[int(0.95 * (len(lat) - 1))]
    return {"asks_s": len(qs) / wall, "p50": 1000 * statistics.median(lat), "p95": 1000 * p95}


def start_server(settings: Settings, port: int) -> subprocess.Popen:
    env = {**os.environ, "KBGRAPH_HOME": str(settings.home), "KBGRAPH_NAME": settings.name, "KBGRAPH_LLM_MODEL": "",
           "KBGRAPH_LLM_BASE_URL": "", "KBGRAPH_SERVE_PORT": str(port)}  # fmt: skip
    if settings.uri:
        env["KBGRAPH_URI"] = settings.uri
    exe = Path(sys.executable).with_name("kbgraph")
    proc = subprocess.Popen([str(exe), "serve"], env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 120
    while True:
        try:
            if httpx.get(f"http://127.0.0.1:{port}/readyz", timeout=60).status_code == 200:  # loads the embedder
                return proc
        except httpx.TransportError:
            pass
        if proc.poll() is not None or time.monotonic() > deadline:
            raise SystemExit("kbgraph serve did not become ready")
        time.sleep(0.3)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--corpus", default="docs", choices=["docs", "2wiki"])
    ap.add_argument("--requests", type=int, default=96, help="Timed asks per concurrency level and side.")
    ap.add_argument("--levels", default="1,8,32")
    ap.add_argument("--home", default=str(Path.home() / ".kbgraph-bench"))
    ap.add_argument("--uri", default=None, help="A Neo4j bolt:// URI instead of the embedded store.")
    ap.add_argument("--port", type=int, default=18080)
    ap.add_argument("--llm-latency", type=float, default=None, metavar="SECONDS",
                    help="Instead: method l1 with a scripted LLM answering after SECONDS, in-process through the "
                    "server's KBPool; wall time of 4 and of 16 concurrent asks on one knowledge base.")
    args = ap.parse_args()

    settings = Settings(home=Path(args.home), name=f"serve-{args.corpus}", uri=args.uri, llm_model=None,
                        llm_base_url=None)  # fmt: skip
    source = EXAMPLES / "docs" if args.corpus == "docs" else EXAMPLES / "multihop/2wikimultihopqa/dev500.corpus.jsonl"
    with KnowledgeBase(settings=settings) as kb:
        report = kb.ingest([source], progress=False)
        print(f"knowledge base {settings.name}: {report.added} added, {report.unchanged} unchanged", file=sys.stderr)

    if args.llm_latency is not None:
        llm_concurrency(settings, args.corpus, args.llm_latency)
        return
    pool = KBPool(settings)
    proc = start_server(settings, args.port)
    url = f"http://127.0.0.1:{args.port}/v1/kb/{settings.name}/ask"
    client = httpx.Client(timeout=300, limits=httpx.Limits(max_connections=64))

    def in_process(q: str) -> None:
        with pool.use(settings.name) as base:
            base.ask(q)

    def over_http(q: str) -> None:
        r = client.post(url, json={"question": q})
        r.raise_for_status()

    rows = []
    try:
        for call in (in_process, over_http):
            measure(call, questions(args.corpus, WARMUP), 1)
        for level in [int(x) for x in args.levels.split(",")]:
            qs = questions(args.corpus, args.requests)
            local, remote = measure(in_process, qs, level), measure(over_http, qs, level)
            rows.append((level, local, remote))
            print(f"concurrency {level}: in-process {local}, http {remote}", file=sys.stderr)
    finally:
        client.close()
        proc.terminate()
        proc.wait(30)
        pool.close()

    print(f"\n{settings.name} on {settings.backend}, {args.requests} asks per level, no LLM\n")
    print("| concurrency | in-process asks/s | p50 ms | p95 ms | HTTP asks/s | p50 ms | p95 ms "
          "| p50 HTTP ÷ in-process |")
    print("|---:|---:|---:|---:|---:|---:|---:|---:|")
    for level, a, b in rows:
        print(f"| {level} | {a['asks_s']:.1f} | {a['p50']:.0f} | {a['p95']:.0f} | {b['asks_s']:.1f} | {b['p50']:.0f} "
              f"| {b['p95']:.0f} | {b['p50'] / a['p50']:.2f} |")


def llm_concurrency(settings: Settings, corpus: str, latency: float) -> None:
    """Issue 29: N asks with an LLM of fixed latency on one knowledge base at once, through ``KBPool`` as the
    server runs them (``serve_store_connections``, default 4): their wall time for N = 4 and N = 16. Under a
    lock per knowledge base 16 take 4x the time of 4; with one connection per request, 16 take
    ceil(16 / connections) rounds of the LLM's latency."""
    import json as _json

    from kbgraph.llm.fake import ScriptedLLM

    def respond(messages):
        time.sleep(latency)
        return _json.dumps({"answer": "scripted", "rationale": "scripted"})

    rows = []
    for connections in (1, settings.serve_store_connections):  # 1 = one request at a time, as the old lock
        pool = KBPool(settings.model_copy(update={"serve_store_connections": connections}))
        try:
            def ask(q: str, pool: KBPool = pool) -> None:
                with pool.use(settings.name) as kb:
                    kb.llm = ScriptedLLM(respond)
                    kb.ask(q, method="l1")

            ask(questions(corpus, 1)[0])  # warm-up: embedder, query plans, one connection
            walls = {}
            for n in (4, 16):
                t0 = time.perf_counter()
                with ThreadPoolExecutor(max_workers=n) as ex:
                    list(ex.map(ask, questions(corpus, n)))
                walls[n] = time.perf_counter() - t0
                print(f"connections {connections}, {n} concurrent asks: {walls[n]:.2f} s", file=sys.stderr)
            rows.append((connections, walls))
        finally:
            pool.close()
    print(f"\n{settings.name} on {settings.backend}, method l1, scripted LLM latency {latency} s\n")
    print("| serve_store_connections | 4 asks wall s | 16 asks wall s | 16 ÷ 4 |")
    print("|---:|---:|---:|---:|")
    for connections, walls in rows:
        print(f"| {connections} | {walls[4]:.2f} | {walls[16]:.2f} | {walls[16] / walls[4]:.2f} |")


if __name__ == "__main__":
    main()
