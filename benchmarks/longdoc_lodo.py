"""A swept setting chosen leave-one-domain-out (issue 56; the brief: anything swept is reported leave-one-domain-out
beside the in-set figure): reads the ``--json`` of :mod:`benchmarks.longdoc` run with one variant per value of the
setting, and for each domain picks the variant that is best on the *other* domains' questions, then reports that
variant's figure on the held-out domain.

    .venv/bin/python -m benchmarks.longdoc --variant w0=propagation \\
        --variant w10=propagation:weight_document_text=0.1 ... --json /tmp/sweep.json
    .venv/bin/python -m benchmarks.longdoc_lodo /tmp/sweep.json [--set examples/longdoc/dev] [--by page@5,doc@5]

The choice is by the sum of the ``--by`` measures (each the share of the other domains' questions, pooled), ties to
the first variant given (put the setting's current value first). Prints, per held-out domain, the variant chosen
and its figures beside the current value's (the first variant's), then the pooled held-out figures.
"""

from __future__ import annotations

import argparse
import json
from collections import Counter
from pathlib import Path
from typing import Any

from kbgraph.eval.dataset import load_dataset

from benchmarks.common import EXAMPLES


def choose(report: dict[str, Any], counts: dict[str, int], held_out: str, by: list[str]) -> str:
    """The variant of ``report`` (benchmarks.longdoc's JSON) with the highest pooled ``by`` measures over every
    domain but ``held_out`` (``counts``: questions per domain); ties go to the earliest variant."""

    def pooled(name: str) -> float:
        domains = report[name]["by_domain"]
        return sum(domains[d][m] * counts[d] for d in domains if d != held_out for m in by)

    names = list(report)
    return max(names, key=lambda n: (pooled(n), -names.index(n)))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("json_file")
    ap.add_argument("--set", default=str(EXAMPLES / "longdoc" / "dev"))
    ap.add_argument("--by", default="page@5,doc@5")
    args = ap.parse_args()
    report = json.loads(Path(args.json_file).read_text(encoding="utf-8"))
    by = [m.strip() for m in args.by.split(",") if m.strip()]
    questions = load_dataset(args.set).questions
    counts = dict(Counter(str(q.meta.get("domain", "")) for q in questions))
    first = next(iter(report))
    measures = list(next(iter(report[first]["by_domain"].values())))
    print(f"| held-out domain (questions) | chosen on the others | {' / '.join(measures)} | {first}: same |")
    print("|---|---|---|---|")
    held = {m: 0.0 for m in measures}
    base = {m: 0.0 for m in measures}
    for domain in sorted(counts):
        name = choose(report, counts, domain, by)
        got, was = report[name]["by_domain"][domain], report[first]["by_domain"][domain]
        for m in measures:
            held[m] += got[m] * counts[domain]
            base[m] += was[m] * counts[domain]
        print(
            f"| {domain} ({counts[domain]}) | {name} | {' / '.join(f'{got[m]:.1f}' for m in measures)} | "
            f"{' / '.join(f'{was[m]:.1f}' for m in measures)} |"
        )
    total = sum(counts.values())
    print(
        f"| **all, held out** ({total}) | | {' / '.join(f'{held[m] / total:.1f}' for m in measures)} | "
        f"{' / '.join(f'{base[m] / total:.1f}' for m in measures)} |"
    )


if __name__ == "__main__":
    main()
