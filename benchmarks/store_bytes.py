"""Where the bytes go (issue 38): the embedded FalkorDB server's memory per passage, split by label and by what
holds it (vector properties, HNSW indexes, other indexes, text properties, node and edge records), measured by
difference.

    .venv/bin/python -m benchmarks.store_bytes [--passages 1000] [--home /tmp/bytes-home] [--build]
        [--out <home>/store-bytes] [--hnsw-m 8]

**The knowledge base**: ``--build`` makes a fresh one, ``<home>/bytes_<passages>``, of the first ``--passages``
passages of benchmarks/scale_corpus.py's corpus (1,000: the 502 gold passages of the first 200 2Wiki dev500
questions, then other 2Wiki dev500 passages, all real) through ``KnowledgeBase(settings=...).ingest([corpus])``
with default settings (its own embedding cache ``<home>/cache``, no LLM, the server never stopped for idleness);
it measures the live server 30 s after the ingest (**after ingest**). Without ``--build`` the knowledge base
already there is measured (its server as it is now, for the "after ingest" columns).

**After a restart**: the knowledge base's server is stopped (the append-only file flushed), its
``appendonlydir`` copied to ``<home>/scratch`` and a server started there on the copy: loading replays the file
and FalkorDB rebuilds every index (it persists none), so this is the state a user gets after ``kbgraph store
stop`` or a reboot. The original knowledge base is not touched again.

**By difference**, on that restarted copy, one step at a time, each step's bytes = Redis ``used_memory`` before
minus after (INFO memory: every byte the server and the FalkorDB module hold through Redis' allocator, jemalloc;
read once it is stable, and every index back to OPERATIONAL: FalkorDB frees some of it asynchronously and
re-indexes a label's other fields when one is dropped). The steps, in this order:

1. per vector label: ``DROP VECTOR INDEX`` -> **HNSW index** (its own copy of each vector, its links, the
   RediSearch document table);
2. per vector label: ``SET n.embedding = NULL`` -> **vector property** (the ``vecf32`` value on the node);
3. per label: the full-text index (``db.idx.fulltext.drop``), then each range index (``document_id``,
   ``Document.title``, and ``id`` after its uniqueness constraint) -> **other indexes**;
4. per label, per property (``id`` included): ``SET n.<property> = NULL`` -> **text properties** (strings, lists,
   numbers and booleans; per property in the JSON output);
5. ``GRAPH.DELETE`` -> **node and edge records** of every label at once (node and edge blocks, the label and
   relation matrices, edge properties): deleting one relationship type or label at a time is not measurable,
   FalkorDB keeps deleted records on free lists and queues deletions in delta matrices (used_memory grows).

What is left (``used_memory`` after step 5) is the server itself; RSS minus ``used_memory`` is the allocator's
(fragmentation, pages it keeps, the server's code and stacks). Splits within a label can move by the
re-indexing a drop causes (step 3 rebuilds the label's remaining index fields), not the label's total.

**Columns** (per passage = divided by ``--passages``; KB = 1024 bytes):

* ``nodes/passage``, ``vectors/passage``: nodes of the label, and those with an ``embedding``;
* ``vector property``, ``HNSW index``, ``other indexes``, ``text properties``: steps 1-4, KB per passage;
* ``total``: their sum; ``share of RSS``: total / the server's VmRSS after the restart (30 s idle);
* rows below the labels: the indexes of labels that have no nodes in this knowledge base (a fixed cost: each
  label's index is a RediSearch spec of ~110 KB even when empty), node and edge records (step 5; nodes and edges
  per passage), the server itself (VmRSS of an empty server: code, libraries, its own structures; fixed) and the
  rest (VmRSS after the restart minus all of the above: the allocator's fragmentation and the pages it keeps);
* ``raw vectors``: vectors x dimension x 4 bytes (the float32 values alone); ``raw text``: UTF-8 bytes of the
  label's string properties (ids included);
* ``--hnsw-m M``: afterwards, on a second copy, each label's vector index is dropped and created again with
  ``M`` (FalkorDB re-indexes every vector): the bytes of the vector indexes at ``M`` against kbgraph's M 16
  (``GraphStore.ensure_schema``), the storage side of a smaller M (its recall is not measured here).

Also recorded: the server's VmRSS and VmHWM (``/proc/<pid>/status``; VmRSS 30 s after the last change, jemalloc
returning freed pages over ~10 s, and again after ``MEMORY PURGE``), INFO memory (used_memory, the allocator's
figures, mem_fragmentation_ratio) after ingest and after the restart, FalkorDB's own estimate (``GRAPH.MEMORY
USAGE <graph> SAMPLES 10000``, whole MB per part; it leaves the vector indexes out), the module version, and an
empty server's RSS and used_memory. Output: ``<out>.json`` (every figure) and ``<out>.md`` (the table), printed.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from benchmarks import scale_corpus
from benchmarks.common import snake, statement

KB = 1024
LABELS = ("Document", "Section", "Chunk", "AtomicQuestion", "Triple", "Entity", "Tag")
COLUMNS = ("vector property", "HNSW index", "other indexes", "text properties")


def settings_over(home: Path, passages: int) -> dict[str, Any]:
    """The knowledge base's settings: defaults but for its home, name, cache folder, no LLM and no idle stop."""
    return {
        "home": str(home),
        "name": f"bytes_{passages}",
        "falkor_idle_timeout": 0,
        "embedding_cache_dir": str(home / "cache"),
        "llm_model": None,
    }


# --- the server -----------------------------------------------------------------------------------------
class Server:
    """A redis client on an embedded FalkorDB server's socket, with the memory readings of the docstring."""

    def __init__(self, folder: Path, graph: str):
        import redis

        from kbgraph.store.falkor_server import EmbeddedFalkorDB

        self.embedded = EmbeddedFalkorDB(folder, idle_timeout=0, start_timeout=600)
        self.graph = graph
        self.redis = redis.Redis(
            unix_socket_path=str(self.embedded.ensure_running()), decode_responses=True, socket_timeout=600
        )

    def query(self, cypher: str, params: dict[str, Any] | None = None) -> list[list[Any]]:
        """The rows of the Cypher text ``cypher`` (from :meth:`run`) with ``params`` (FalkorDB's ``CYPHER k=v``
        header)."""
        from falkordb.helpers import stringify_param_value

        header = ""
        if params:
            header = "CYPHER " + " ".join(f"{k}={stringify_param_value(v)}" for k, v in params.items()) + " "
        reply = self.redis.execute_command("GRAPH.QUERY", self.graph, header + cypher)
        return reply[1] if len(reply) == 3 else []  # [header, rows, statistics], or [statistics] alone

    def run(self, name: str, params: dict[str, Any] | None = None, **identifiers: str) -> list[list[Any]]:
        """The rows of the statement ``name`` of cypher/ (benchmarks.common ``statement``, ``identifiers`` written
        in) with ``params``."""
        return self.query(statement(name, **identifiers), params)

    def vm(self) -> dict[str, float]:
        """VmRSS and VmHWM of the server in KB."""
        out = {}
        for line in Path(f"/proc/{self.embedded._pid()}/status").read_text().splitlines():
            if line.startswith(("VmRSS:", "VmHWM:")):
                out[line.split(":")[0]] = float(line.split()[1])
        return out

    def settled(self, timeout: float = 120.0) -> int:
        """used_memory once every index is OPERATIONAL and two readings 0.5 s apart agree within 16 KB."""
        deadline = time.monotonic() + timeout
        last = -1
        while time.monotonic() < deadline:
            busy = [r for r in self._statuses() if r[0] != "OPERATIONAL"]
            used = int(self.redis.info("memory")["used_memory"])
            if not busy and abs(used - last) <= 16 * KB:
                return used
            last = used
            time.sleep(0.5)
        return last

    def _statuses(self) -> list[list[Any]]:
        import redis

        try:
            return self.run("bench/index_statuses")
        except redis.exceptions.ResponseError:  # the graph was deleted
            return []

    def snapshot(self, idle: float = 30.0) -> dict[str, Any]:
        """RSS ``idle`` seconds after the last change (jemalloc returns freed pages over ~10 s), then after MEMORY
        PURGE; INFO memory and GRAPH.MEMORY USAGE."""
        self.settled()
        time.sleep(idle)
        found = self.vm()
        self.redis.execute_command("MEMORY", "PURGE")
        time.sleep(1)
        info = self.redis.info("memory")
        keys = (
            "used_memory",
            "used_memory_rss",
            "used_memory_peak",
            "allocator_allocated",
            "allocator_active",
            "allocator_resident",
            "mem_fragmentation_ratio",
            "allocator_frag_ratio",
            "allocator_rss_ratio",
            "rss_overhead_ratio",
        )
        snap: dict[str, Any] = {**found, "VmRSS_purged": self.vm()["VmRSS"], **{k: info.get(k) for k in keys}}
        try:
            snap["graph_memory_usage_mb"] = self.redis.execute_command(
                "GRAPH.MEMORY", "USAGE", self.graph, "SAMPLES", 10000
            )
        except Exception as exc:  # an empty graph has no key
            snap["graph_memory_usage_mb"] = str(exc)
        return snap

    def stop(self) -> None:
        self.embedded.stop()


# --- what the graph holds -------------------------------------------------------------------------------
def inventory(srv: Server, dimension: int) -> dict[str, Any]:
    """Per label: nodes, vectors (of ``dimension``: the store has one for every vector index), and per property its count, type and UTF-8 bytes (strings);
    per relationship type: its count and properties."""
    labels: dict[str, Any] = {}
    for label, count in srv.run("bench/label_counts"):
        props: dict[str, Any] = {}
        for key, typ, n in srv.run("bench/label_properties", {"label": label}):
            entry = props.setdefault(key, {"count": 0, "types": [], "utf8_bytes": 0})
            entry["count"] += n
            entry["types"].append(typ)
            if typ == "String":
                values = srv.run("bench/label_strings", {"label": label, "key": key})
                entry["utf8_bytes"] += sum(len(v[0].encode("utf-8")) for v in values)
        dim = dimension if "embedding" in props else 0
        labels[label] = {
            "nodes": int(count),
            "vectors": props.get("embedding", {}).get("count", 0),
            "dimension": dim,
            "properties": props,
        }
    types = {}
    for rtype, count in srv.run("bench/relationship_counts"):
        keys = srv.run("bench/relationship_properties", {"type": rtype})
        types[rtype] = {"count": int(count), "properties": sorted(k[0] for k in keys)}
    indexes = [dict(zip(("label", "properties", "types"), row, strict=True)) for row in srv.run("bench/indexes")]
    return {"labels": labels, "relationships": types, "indexes": indexes}


def _index_fields(srv: Server) -> dict[str, dict[str, list[str]]]:
    """{label: {property: [index types]}} of the graph's node indexes."""
    out: dict[str, dict[str, list[str]]] = {}
    for label, types in srv.run("bench/node_index_types"):
        for part in types.strip("{}").split("], "):
            prop, _, kinds = part.partition(": [")
            out.setdefault(label, {})[prop.strip()] = [k.strip(" ]") for k in kinds.split(",") if k.strip(" ]")]
    return out


# --- by difference --------------------------------------------------------------------------------------
def decompose(srv: Server, inv: dict[str, Any], log=print) -> list[dict[str, Any]]:
    """Run the steps of the module docstring on ``srv`` (destructive); one record per step."""
    steps: list[dict[str, Any]] = []
    used = srv.settled()

    def step(
        label: str,
        column: str,
        item: str,
        *statements: tuple[str, dict[str, Any], dict[str, str]],
        command: tuple | None = None,
    ) -> None:
        """Run ``statements`` ((name, parameters, identifiers) each) or the redis ``command``; record the bytes."""
        nonlocal used
        t0 = time.perf_counter()
        if command is not None:
            srv.redis.execute_command(*command)
        for name, params, identifiers in statements:
            srv.run(name, params, **identifiers)
        after = srv.settled()
        steps.append(
            {
                "label": label,
                "column": column,
                "item": item,
                "bytes": used - after,
                "seconds": round(time.perf_counter() - t0, 2),
            }
        )
        log(f"  {label:15} {column:16} {item:28} {(used - after) / KB:10,.0f} KB")
        used = after

    fields = _index_fields(srv)
    present = [*inv["labels"], *(lab for lab in fields if lab not in inv["labels"])]  # indexed labels with no nodes too
    for label in present:  # 1. HNSW indexes
        if "VECTOR" in fields.get(label, {}).get("embedding", []):
            step(label, "HNSW index", "embedding", (f"schema/drop_vector_{snake(label)}", {}, {}))
    for label in present:  # 2. vector properties
        if inv["labels"].get(label, {}).get("vectors"):
            step(label, "vector property", "embedding", ("bench/clear_vectors", {"label": label}, {}))
    for label in present:  # 3. other indexes
        for prop, kinds in _index_fields(srv).get(label, {}).items():
            if "FULLTEXT" in kinds:
                step(label, "other indexes", f"full-text {prop}", ("bench/drop_fulltext", {"label": label}, {}))
        for prop, kinds in _index_fields(srv).get(label, {}).items():
            if "RANGE" in kinds:
                cmd = ("GRAPH.CONSTRAINT", "DROP", srv.graph, "UNIQUE", "NODE", label, "PROPERTIES", 1, prop)
                try:
                    srv.redis.execute_command(*cmd)
                    srv.settled()
                except Exception:
                    pass  # no constraint on this property
                step(
                    label,
                    "other indexes",
                    f"range {prop}",
                    ("bench/drop_range_index", {}, {"label": label, "property": prop}),
                )
    for label in present:  # 4. properties
        for prop in inv["labels"].get(label, {}).get("properties", {}):
            if prop != "embedding":
                removed = {"label": label, "properties": {prop: None}}  # a property set to null is removed
                step(label, "text properties", prop, ("bench/clear_properties", removed, {}))
    # 5. the rest of the graph at once: deleting edges or nodes one type at a time is not measurable (FalkorDB
    # keeps deleted records on free lists and queues deletions in delta matrices, so used_memory grows)
    step("all labels", "node and edge records", "GRAPH.DELETE", command=("GRAPH.DELETE", srv.graph))
    return steps


def hnsw_m(srv: Server, inv: dict[str, Any], m: int, dimension: int, log=print) -> dict[str, Any]:
    """used_memory with every vector index at M 16 (as built), then dropped and created again at ``m``."""
    before = srv.settled()
    for label, info in inv["labels"].items():
        if info["vectors"]:
            srv.run(f"schema/drop_vector_{snake(label)}")
            srv.settled()
            srv.run(
                f"schema/vector_{snake(label)}",
                {"dimension": dimension, "m": m, "ef_construction": 100, "ef_runtime": 100},
            )
            srv.settled(timeout=1800)
    after = srv.settled()
    log(f"  vector indexes at M {m}: {(before - after) / KB:,.0f} KB less than at M 16")
    return {"m": m, "used_before": before, "used_after": after, "saved_bytes": before - after}


# --- the run --------------------------------------------------------------------------------------------
def build(home: Path, passages: int) -> dict[str, Any]:
    """A fresh knowledge base of the first ``passages`` passages of the scale corpus, default settings."""
    from kbgraph.kb import KnowledgeBase
    from kbgraph.settings import Settings
    from kbgraph.store.falkor_server import EmbeddedFalkorDB

    settings = Settings(**settings_over(home, passages))
    EmbeddedFalkorDB(settings.kb_dir).stop()
    shutil.rmtree(settings.kb_dir, ignore_errors=True)
    corpus_passages, _ = scale_corpus.build(passages, questions=200)
    corpus = scale_corpus.write_jsonl(corpus_passages, home / "corpus" / f"scale-{passages}.jsonl")
    with KnowledgeBase(settings=settings) as kb:
        kb.stats()  # connect (and start the server) before the clock starts
        t0 = time.perf_counter()
        report = kb.ingest([corpus], progress=False)
        wall = time.perf_counter() - t0
    time.sleep(2)  # the append-only file is fsynced every second
    return {"ingest_s": round(wall, 1), "added": report.added, "failed": report.failed}


def copy_store(src: Path, dst: Path) -> None:
    from kbgraph.store.falkor_server import EmbeddedFalkorDB

    EmbeddedFalkorDB(dst).stop()
    shutil.rmtree(dst, ignore_errors=True)
    dst.mkdir(parents=True)
    shutil.copytree(src / "appendonlydir", dst / "appendonlydir")


def empty_server(home: Path) -> dict[str, Any]:
    folder = home / "empty"
    from kbgraph.store.falkor_server import EmbeddedFalkorDB

    EmbeddedFalkorDB(folder).stop()
    shutil.rmtree(folder, ignore_errors=True)
    srv = Server(folder, "empty")
    try:
        srv.redis.execute_command("MEMORY", "PURGE")
        time.sleep(1)
        return {**srv.vm(), "used_memory": int(srv.redis.info("memory")["used_memory"])}
    finally:
        srv.stop()
        shutil.rmtree(folder, ignore_errors=True)


def table(result: dict[str, Any]) -> str:
    """The markdown table "Where the bytes go per passage" of ``result``."""
    n = result["passages"]
    after = result["after_restart"]
    rss = after["VmRSS"] * KB
    inv = result["inventory"]
    per: dict[str, dict[str, int]] = {}
    for s in result["steps"]:
        per.setdefault(s["label"], dict.fromkeys(COLUMNS, 0))[s["column"]] = (
            per.get(s["label"], {}).get(s["column"], 0) + s["bytes"]
        )
    head = (
        "| label | nodes / passage | vectors / passage | raw vectors KB | vector property KB | HNSW index KB "
        "| other indexes KB | raw text KB | text properties KB | total KB | share of RSS |"
    )
    lines = [head, "|" + "---|" * (head.count("|") - 1)]

    def kb(v: float) -> str:
        return f"{v / n / KB:,.1f}"

    def share(v: float) -> str:
        return f"{100 * v / rss:.1f} %"

    graph = 0
    empty_labels = sorted(x for x in per if x not in inv["labels"] and x != "all labels")
    labels = [x for x in LABELS if x in per and x in inv["labels"]]
    labels += [x for x in per if x not in LABELS and x in inv["labels"]]
    for label in labels:
        info = inv["labels"][label]
        raw_vec = info["vectors"] * info["dimension"] * 4
        raw_text = sum(p["utf8_bytes"] for p in info["properties"].values())
        total = sum(per[label].get(c, 0) for c in COLUMNS)
        graph += total
        lines.append(
            f"| {label} | {info['nodes'] / n:.2f} | {info['vectors'] / n:.2f} | {kb(raw_vec)} | "
            f"{kb(per[label]['vector property'])} | {kb(per[label]['HNSW index'])} | "
            f"{kb(per[label]['other indexes'])} | {kb(raw_text)} | {kb(per[label]['text properties'])} | "
            f"{kb(total)} | {share(total)} |"
        )
    if empty_labels:
        fixed = sum(sum(per[x].values()) for x in empty_labels)
        graph += fixed
        lines.append(
            f"| indexes of labels with no nodes here ({', '.join(empty_labels)}) | 0 | 0 | | | | "
            f"{kb(fixed)} | | | {kb(fixed)} | {share(fixed)} |"
        )
    nodes = sum(v["nodes"] for v in inv["labels"].values())
    edges = sum(v["count"] for v in inv["relationships"].values())
    records = per.get("all labels", {}).get("node and edge records", 0)
    empty = result["empty_server"]["VmRSS"] * KB
    rest = rss - graph - records - empty
    lines += [
        f"| node and edge records, all labels ({nodes / n:.1f} nodes, {edges / n:.1f} edges) | | | | | | | | | "
        f"{kb(records)} | {share(records)} |",
        f"| the server itself (VmRSS of an empty one: fixed) | | | | | | | | | {kb(empty)} | {share(empty)} |",
        f"| the rest (allocator: fragmentation, pages kept) | | | | | | | | | {kb(rest)} | {share(rest)} |",
        f"| **server VmRSS after restart** | | | | | | | | | **{kb(rss)}** | 100 % |",
    ]
    return "\n".join(lines)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--passages", type=int, default=1000)
    ap.add_argument("--home", type=Path, default=Path("/tmp/bytes-home"))
    ap.add_argument("--build", action="store_true", help="build the knowledge base anew first")
    ap.add_argument("--out", type=Path, default=None, help="<out>.json and <out>.md (default <home>/store-bytes)")
    ap.add_argument("--hnsw-m", type=int, default=0, help="also measure the vector indexes rebuilt at this M")
    args = ap.parse_args()
    home = args.home.resolve()
    home.mkdir(parents=True, exist_ok=True)
    out = args.out or home / "store-bytes"
    from kbgraph.settings import Settings

    settings = Settings(**settings_over(home, args.passages))
    commit = subprocess.run(
        ["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True, cwd=Path(__file__).parent
    ).stdout.strip()
    result: dict[str, Any] = {
        "date": datetime.now(UTC).strftime("%Y-%m-%d"),
        "commit": commit,
        "cores": os.cpu_count(),
        "passages": args.passages,
        "command": " ".join(["python -m benchmarks.store_bytes", *sys.argv[1:]]),
    }
    if args.build:
        result["build"] = build(home, args.passages)
        print(json.dumps(result["build"]), flush=True)
    live = Server(settings.kb_dir, settings.name)
    result["module"] = [m for m in live.redis.execute_command("MODULE", "LIST") if m.get("name") == "graph"]
    result["after_ingest"] = live.snapshot()
    live.stop()
    print("after ingest:", json.dumps(result["after_ingest"]), flush=True)
    scratch = home / "scratch"
    copy_store(settings.kb_dir, scratch)
    srv = Server(scratch, settings.name)
    try:
        result["after_restart"] = srv.snapshot()
        print("after restart:", json.dumps(result["after_restart"]), flush=True)
        result["inventory"] = inv = inventory(srv, settings.embedding.embedding_dimension)
        result["steps"] = decompose(srv, inv)
        result["after_steps"] = srv.snapshot()
    finally:
        srv.stop()
    if args.hnsw_m:
        copy_store(settings.kb_dir, scratch)
        srv = Server(scratch, settings.name)
        try:
            result["hnsw_m"] = hnsw_m(srv, inv, args.hnsw_m, settings.embedding.embedding_dimension)
        finally:
            srv.stop()
    shutil.rmtree(scratch, ignore_errors=True)
    result["empty_server"] = empty_server(home)
    out.with_suffix(".json").write_text(json.dumps(result, indent=1), encoding="utf-8")
    md = table(result)
    out.with_suffix(".md").write_text(md + "\n", encoding="utf-8")
    print("\n" + md)
    print(f"\nresults: {out.with_suffix('.json')}, {out.with_suffix('.md')}")


if __name__ == "__main__":
    main()
