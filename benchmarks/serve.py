"""The cost of serving over HTTP (issues 16, 29): asks/s and p50/p95 latency at concurrency 1, 8 and 32 through
``kbgraph serve`` (a subprocess on 127.0.0.1, called with httpx) against in-process calls in the same run, and
the overhead ratio. No LLM: retrieval-only answers (PIKE-RAG §5.2.3 propagation plus evidence picking).

    .venv/bin/python -m benchmarks.serve [--corpus docs|2wiki] [--store falkordb|neo4j] [--requests 96]
        [--levels 1,8,32] [--home DIR] [--uri bolt://...]
        [--llm-latency SECONDS | --llm-base-url URL --llm-model NAME | --during-ingest N]

The knowledge base is built (incrementally) under --home (default ~/.kbgraph-bench): ``serve-docs`` from
examples/docs, or ``serve-2wiki`` from the 2WikiMultiHopQA dev500 corpus. ``--store neo4j`` starts a local Neo4j
of its own (``<home>/neo4j-serve-<corpus>``, bolt port 17788: a Community server hosts one database) and stops it
at the end. The in-process side goes through the same ``KBPool`` as the server, so the ratio is what HTTP, JSON
and the server add. Both sides warm up (embedder, query plans) before timing. Each HTTP level also reports the
CPU per ask of the whole machine and of the server process (Linux /proc) and the asks/s the cores allow at that
CPU: the most any concurrency can gain on this machine.

Other modes (issue 29):

* ``--llm-latency S``: method l1 with a scripted LLM answering after S seconds, in-process through ``KBPool``;
  wall time of 4 and of 16 asks at once on one knowledge base, with serve_store_connections 1 and 4.
* ``--llm-base-url URL --llm-model NAME``: the same with a real OpenAI-compatible server (``kbgraph llm start
  --parallel 4``), with llm_max_concurrency 1 (one answer at a time, as the lock before issue 29 made it) and
  then the server's slots, in the same invocation.
* ``--during-ingest N``: over HTTP, 8 clients ask in a loop before and during an ingest job of N 2Wiki passages
  into the same knowledge base: p50/p95 of both phases, and every cited chunk checked at once (``GET
  /chunks/ID`` answers only for a chunk of a complete document). The passages are deleted afterwards.
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
from kbgraph.process import proc_stat
from kbgraph.serve.kbs import KBPool
from kbgraph.store import backend_name
from kbgraph.settings import Settings

from benchmarks.common import DEFAULT_HOME, EXAMPLES, corpus_path, set_path

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
        path = set_path("2wiki").with_name("dev500.questions.jsonl")
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


def start_server(settings: Settings, port: int, env_extra: dict[str, str] | None = None) -> subprocess.Popen:
    env = {
        **os.environ,
        "KBGRAPH_HOME": str(settings.home),
        "KBGRAPH_NAME": settings.name,
        "KBGRAPH_LLM_MODEL": "",
        "KBGRAPH_LLM_BASE_URL": "",
        "KBGRAPH_SERVE_PORT": str(port),
        **(env_extra or {}),
    }
    if settings.store.uri:
        env.update(
            {"KBGRAPH_URI": settings.store.uri, "NEO4J_PASSWORD": settings.store.neo4j_password.get_secret_value()}
        )
    exe = Path(sys.executable).with_name("kbgraph")
    proc = subprocess.Popen([str(exe), "serve"], env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 180
    while True:
        try:
            if httpx.get(f"http://127.0.0.1:{port}/readyz", timeout=60).status_code == 200:  # loads the embedder
                return proc
        except httpx.TransportError:
            pass
        if proc.poll() is not None or time.monotonic() > deadline:
            raise SystemExit("kbgraph serve did not become ready")
        time.sleep(0.3)


def cpu_seconds(pid: int | None = None) -> float:
    """CPU seconds (user + system) used so far by process ``pid`` (its threads included), or by the whole machine
    (every core, every process) when None; Linux /proc."""
    tick = os.sysconf("SC_CLK_TCK")
    if pid is None:
        fields = Path("/proc/stat").read_text().splitlines()[0].split()[1:]
        idle = int(fields[3]) + int(fields[4])  # idle + iowait
        return (sum(int(x) for x in fields[:8]) - idle) / tick
    fields = proc_stat(pid) or []
    return (int(fields[11]) + int(fields[12])) / tick  # utime, stime


def machine() -> str:
    """Cores and the load average now (the figures' context on a shared machine)."""
    return f"{os.cpu_count()} cores, load average {os.getloadavg()[0]:.1f}"


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--corpus", default="docs", choices=["docs", "2wiki"])
    ap.add_argument("--store", default="falkordb", choices=["falkordb", "neo4j"])
    ap.add_argument("--requests", type=int, default=96, help="Timed asks per concurrency level and side.")
    ap.add_argument("--levels", default="1,8,32")
    ap.add_argument("--home", default=str(DEFAULT_HOME))
    ap.add_argument("--uri", default=None, help="A Neo4j bolt:// URI instead of the embedded store.")
    ap.add_argument("--port", type=int, default=18080)
    ap.add_argument(
        "--llm-latency",
        type=float,
        default=None,
        metavar="SECONDS",
        help="Instead: method l1 with a scripted LLM answering after SECONDS, in-process through the "
        "server's KBPool; wall time of 4 and of 16 concurrent asks on one knowledge base.",
    )
    ap.add_argument("--llm-base-url", default=None, help="Instead: the same with this OpenAI-compatible server.")
    ap.add_argument("--llm-model", default=None)
    ap.add_argument(
        "--during-ingest",
        type=int,
        default=None,
        metavar="N",
        help="Instead: 8 clients asking over HTTP before and during an ingest job of N passages.",
    )
    args = ap.parse_args()

    settings = Settings(
        home=Path(args.home),
        name=f"serve-{args.corpus}",
        uri=args.uri,
        llm_model=None,
        llm_base_url=None,
        falkor_idle_timeout=600,
    )
    local = None
    if args.store == "neo4j" and not args.uri:
        from benchmarks.bench_neo4j import start_local_neo4j

        settings, local = start_local_neo4j(
            settings, Path(args.home) / f"neo4j-serve-{args.corpus}", bolt_port=17788, http_port=17575, timeout=300
        )
    try:
        source = EXAMPLES / "docs" if args.corpus == "docs" else corpus_path("2wiki")
        with KnowledgeBase(settings=settings) as kb:
            report = kb.ingest([source], progress=False)
            print(
                f"knowledge base {settings.name} on {backend_name(settings)}: {report.added} added, "
                f"{report.unchanged} unchanged",
                file=sys.stderr,
            )
        if args.llm_latency is not None or args.llm_base_url:
            llm_concurrency(settings, args.corpus, args.llm_latency, args.llm_base_url, args.llm_model)
        elif args.during_ingest:
            during_ingest(settings, args.corpus, args.port, args.during_ingest)
        else:
            no_llm(settings, args)
    finally:
        if local is not None:
            local.stop()


def no_llm(settings: Settings, args: argparse.Namespace) -> None:
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
            local = measure(in_process, qs, level)
            cpu0, server0 = cpu_seconds(), cpu_seconds(proc.pid)
            remote = measure(over_http, qs, level)
            # CPU per HTTP ask: the whole machine's (server, store, this client) and the server process's
            remote["cpu_ms"] = 1000 * (cpu_seconds() - cpu0) / len(qs)
            remote["server_cpu_ms"] = 1000 * (cpu_seconds(proc.pid) - server0) / len(qs)
            rows.append((level, local, remote, machine()))
            print(f"concurrency {level}: in-process {local}, http {remote}", file=sys.stderr)
    finally:
        client.close()
        proc.terminate()
        proc.wait(30)
        pool.close()

    print(f"\n{settings.name} on {backend_name(settings)}, {args.requests} asks per level, no LLM\n")
    # The most asks/s the machine's cores allow at the measured CPU per ask, and that bound over concurrency 1's
    # rate: the most any concurrency can gain over one client on this machine.
    print(
        "| concurrency | in-process asks/s | p50 ms | p95 ms | HTTP asks/s | p50 ms | p95 ms "
        "| p50 HTTP ÷ in-process | HTTP asks/s ÷ concurrency 1 | CPU ms per HTTP ask: machine / server "
        "| cores' bound asks/s (÷ concurrency 1) | machine after the level |"
    )
    print("|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|")
    base = rows[0][2]["asks_s"] if rows else 1.0
    cores = os.cpu_count() or 1
    for level, a, b, load in rows:
        bound = 1000 * cores / b["cpu_ms"] if b["cpu_ms"] else float("inf")
        print(
            f"| {level} | {a['asks_s']:.1f} | {a['p50']:.0f} | {a['p95']:.0f} | {b['asks_s']:.1f} | {b['p50']:.0f} "
            f"| {b['p95']:.0f} | {b['p50'] / a['p50']:.2f} | {b['asks_s'] / base:.2f} "
            f"| {b['cpu_ms']:.1f} / {b['server_cpu_ms']:.1f} | {bound:.1f} ({bound / base:.2f}) | {load} |"
        )


def llm_concurrency(
    settings: Settings, corpus: str, latency: float | None, base_url: str | None = None, model: str | None = None
) -> None:
    """Issue 29: N asks with an LLM on one knowledge base at once, through ``KBPool`` as the server runs them: their
    wall time for N = 4 and N = 16, with serve_store_connections 1 and the default. No store connection is held
    across the LLM call, so with a scripted LLM of fixed latency 16 take about the time of 4 with either; with a
    real server, the LLM's slots (llm_max_concurrency) bound them. Every question is unique (no LLM cache hit)."""
    import json as _json

    from kbgraph.llm.fake import ScriptedLLM
    from kbgraph.llm.limit import forget

    delay = [latency or 0.0]

    def respond(messages):
        time.sleep(delay[0])
        return _json.dumps({"answer": "scripted", "rationale": "scripted"})

    if base_url:
        settings = settings.updated({"llm_base_url": base_url, "llm_model": model})
    rows = []
    counter = iter(range(1_000_000))
    default = settings.serve.serve_store_connections
    # (serve_store_connections, llm_max_concurrency): with a real server, one LLM request at a time (what the
    # per-knowledge-base lock before issue 29 made it) against the server's slots, in the same invocation
    configs = [(default, 1), (default, None)] if base_url else [(1, None), (default, None)]
    for connections, llm_bound in configs:
        forget()  # each configuration sizes its endpoint's bound afresh
        pool = KBPool(settings.updated({"serve_store_connections": connections, "llm_max_concurrency": llm_bound}))
        try:

            def ask(q: str, pool: KBPool = pool) -> None:
                with pool.use(settings.name) as kb:
                    if not base_url:
                        kb.llm = ScriptedLLM(respond)
                    kb.ask(f"{q} (ask {next(counter)} {time.time()})", method="l1")

            ask(questions(corpus, 1)[0])  # warm-up: embedder, query plans, connections
            walls = {}
            runs = [(4, delay[0]), (16, delay[0])] + ([] if base_url else [(0, 0.0)])  # 0: 16 asks, LLM instant
            for n, seconds in runs:
                delay[0] = seconds
                t0 = time.perf_counter()
                with ThreadPoolExecutor(max_workers=n or 16) as ex:
                    list(ex.map(ask, questions(corpus, n or 16)))
                walls[n] = time.perf_counter() - t0
                llm = f"{model} at {base_url}" if base_url else f"{seconds} s"
                print(
                    f"connections {connections}, {n or 16} concurrent asks, LLM {llm}: {walls[n]:.2f} s",
                    file=sys.stderr,
                )
            delay[0] = latency or 0.0
            bound = ""
            if base_url:
                with pool.use(settings.name) as kb:
                    bound = f"{kb.llm.limit.bound} ({kb.llm.limit.source}), most in flight {kb.llm.limit.most}"
            rows.append((connections, walls, machine(), bound))
        finally:
            pool.close()
    what = f"LLM {model} at {base_url}" if base_url else f"scripted LLM latency {latency} s"
    print(f"\n{settings.name} on {backend_name(settings)}, method l1, {what}\n")
    print(
        "| serve_store_connections | 4 asks wall s | 16 asks wall s | 16 ÷ 4 | 16 asks, LLM instant, wall s "
        "| 16 asks: LLM's share s | llm_max_concurrency | machine |"
    )
    print("|---:|---:|---:|---:|---:|---:|---|---|")
    for connections, walls, load, bound in rows:
        floor = f"{walls[0]:.2f} | {walls[16] - walls[0]:.2f}" if 0 in walls else "- | -"
        print(
            f"| {connections} | {walls[4]:.2f} | {walls[16]:.2f} | {walls[16] / walls[4]:.2f} | {floor} "
            f"| {bound or '-'} | {load} |"
        )


def during_ingest(settings: Settings, corpus: str, port: int, passages: int) -> None:
    """Issue 29: 8 clients ask over HTTP in a loop, first alone (baseline), then while the server runs an ingest
    job of ``passages`` 2Wiki passages (tagged with this run, so the job writes each time) into the same knowledge
    base. Each citation is checked right after its answer with ``GET /chunks/ID``, which answers only for a chunk
    of a complete document (404 otherwise): a citation of a half-written document would show as a 404. The
    passages are deleted at the end."""
    import json as _json
    import tempfile
    import threading

    run = f"run{int(time.time())}"
    folder = Path(tempfile.mkdtemp(prefix="kbgraph-serve-ingest-"))
    corpus_file = folder / f"{run}.jsonl"
    lines = corpus_path("2wiki").read_text(encoding="utf-8").splitlines()
    rows = [_json.loads(x) for x in lines[:passages]]
    corpus_file.write_text(
        "".join(
            _json.dumps({"id": f"{run}:{r['id']}", "title": r["title"], "text": f"{r['text']} ({run})"}) + "\n"
            for r in rows
        ),
        encoding="utf-8",
    )
    proc = start_server(settings, port, {"KBGRAPH_SERVE_INGEST_ROOTS": str(folder)})
    base = f"http://127.0.0.1:{port}/v1/kb/{settings.name}"
    client = httpx.Client(timeout=300, limits=httpx.Limits(max_connections=32))
    qs = questions(corpus, 8) + [r["title"] + "?" for r in rows[: 8 * 4]]
    checked = {"citations": 0, "new": 0, "missing": 0}
    lock = threading.Lock()

    def loop(until: threading.Event, latencies: list[float], worker: int) -> None:
        i = worker
        while not until.is_set():
            q = qs[i % len(qs)]
            i += 8
            t = time.perf_counter()
            r = client.post(f"{base}/ask", json={"question": q, "k": 3})
            r.raise_for_status()
            latencies.append(time.perf_counter() - t)
            for c in r.json()["citations"]:
                ok = client.get(f"{base}/chunks/{c['chunk_id']}").status_code == 200
                with lock:
                    checked["citations"] += 1
                    checked["new"] += run in c.get("document_uri", "") or run in c.get("quote", "")
                    checked["missing"] += not ok

    def phase(seconds: float | None, job: str | None) -> tuple[list[float], dict | None]:
        latencies: list[float] = []
        until = threading.Event()
        threads = [threading.Thread(target=loop, args=(until, latencies, w)) for w in range(8)]
        for t in threads:
            t.start()
        status = None
        if job is None:
            time.sleep(seconds or 0)
        else:
            while True:
                status = client.get(f"http://127.0.0.1:{port}/v1/jobs/{job}").json()
                if status["status"] not in ("queued", "running"):
                    break
                time.sleep(0.5)
        until.set()
        for t in threads:
            t.join()
        return latencies, status

    def pct(lat: list[float], q: float) -> float:
        lat = sorted(lat)
        return 1000 * lat[int(q * (len(lat) - 1))]

    try:
        phase(5, None)  # warm-up
        before, _ = phase(30, None)
        before_load = machine()
        checked.update(citations=0, new=0, missing=0)
        t0 = time.perf_counter()
        job = client.post(f"{base}/ingest", json={"paths": [str(corpus_file)]}).json()["id"]
        during, status = phase(None, job)
        job_s = time.perf_counter() - t0
        during_load = machine()
    finally:
        client.close()
        proc.terminate()
        proc.wait(30)
    with KnowledgeBase(settings=settings) as kb:  # leave the knowledge base as it was
        gone = 0
        for doc in kb.documents(limit=100_000):
            if run in (doc.get("uri") or "") or run in (doc.get("id") or ""):
                gone += kb.delete(doc["id"]).get("documents", 0)
    report = (status or {}).get("report") or {}
    print(
        f"\n{settings.name} on {backend_name(settings)}: 8 clients asking (k 3, no LLM) before and during an ingest "
        f"job of {passages} passages ({report.get('added')} added, job {status and status['status']}, "
        f"{job_s:.0f} s; {gone} deleted afterwards)\n"
    )
    print(
        "| phase | asks | p50 ms | p95 ms | citations checked | of new passages | not of a complete document | machine |"
    )
    print("|---|---:|---:|---:|---:|---:|---:|---|")
    print(
        f"| before the job (30 s) | {len(before)} | {pct(before, 0.5):.0f} | {pct(before, 0.95):.0f} | - | - | - "
        f"| {before_load} |"
    )
    print(
        f"| during the job | {len(during)} | {pct(during, 0.5):.0f} | {pct(during, 0.95):.0f} | "
        f"{checked['citations']} | {checked['new']} | {checked['missing']} | {during_load} |"
    )


if __name__ == "__main__":
    main()
