"""Report of the ``graphcrf`` suite: inference checks, the skip-chain task, scaling."""

from __future__ import annotations

from pathlib import Path

from zbound_benchmarks.report import num, prose, table


def _inference(recs: list[dict], doc: dict) -> list[str]:
    from zbound_benchmarks.suites.graphcrf.runs import MISMATCH

    if not recs:
        return []
    graphs = sum(r["metrics"]["graphs"] for r in recs)
    bad = sum(r["metrics"]["mismatches"] for r in recs)
    forest = doc.get("extra", {}).get("forest_mismatches")
    verdict = ("holds" if bad == 0 else "does NOT hold")
    lines = [prose("graphcrf", "inference", graphs=graphs, tol=f"{MISMATCH:g}"),
             f"**{bad} mismatches beyond {MISMATCH:g} in {graphs} graphs "
             f"(one forest pass over all of them: {forest} graphs off): {verdict}.**", ""]
    lines += table(("family", "graphs", "largest treewidth", "log Z, largest relative error",
                    "marginals, largest absolute error", "MAP short of the best",
                    "mismatches", "ms per graph"),
                   [(r["dataset"].split("/")[1], m["graphs"], m["max_treewidth"],
                     f"{m['logz_rel']:.1e}", f"{m['marginal_abs']:.1e}", m["map_short"],
                     m["mismatches"], num(1e3 * m["seconds"] / m["graphs"]))
                    for r in recs for m in [r["metrics"]]])
    return lines + [""]


def _medium(recs: list[dict]) -> list[str]:
    from zbound_benchmarks.suites.graphcrf.runs import MEDIUM_LABELS, MISMATCH

    ours = [r for r in recs if r["method"] == "junction-tree"]
    if not ours:
        return [prose("graphcrf", "no-pgmpy"), ""]
    graphs = sum(r["metrics"]["graphs"] for r in ours)
    bad = sum(r["metrics"]["mismatches"] for r in ours)
    mine = sum(r["metrics"]["seconds"] for r in ours)
    peer = sum(r["metrics"]["pgmpy_seconds"] for r in ours)
    verdict = "holds" if bad == 0 else "does NOT hold"
    lines = [prose("graphcrf", "inference-medium", graphs=graphs, labels=MEDIUM_LABELS,
                   tol=f"{MISMATCH:g}"),
             f"**{bad} mismatches beyond {MISMATCH:g} in {graphs} graphs against pgmpy: "
             f"{verdict}. Time per graph: pgmpy takes {peer / mine:.1f}x ours.**", ""]
    lines += table(("family", "graphs", "largest graph", "largest treewidth",
                    "log Z, largest relative difference", "marginals, largest difference",
                    "MAP short of pgmpy's best", "ms per graph", "pgmpy ms per graph"),
                   [(r["dataset"].split("/")[1], m["graphs"], m["max_nodes"],
                     m["max_treewidth"], f"{m['logz_rel']:.1e}", f"{m['marginal_abs']:.1e}",
                     m["map_short"], num(1e3 * m["seconds"] / m["graphs"]),
                     num(1e3 * m["pgmpy_seconds"] / m["graphs"]))
                    for r in ours for m in [r["metrics"]]])
    return lines + [""]


def _skip_chain(recs: list[dict], evals: list[dict]) -> list[str]:
    from zbound_benchmarks.suites.graphcrf.runs import CHAIN_RATIO

    if not recs:
        return [prose("graphcrf", "no-corpus"), ""]
    m0 = recs[0]["metrics"]
    by = {r["method"]: r for r in recs}
    lines = [prose("graphcrf", "skip-chain", n_train=m0["n_train"], n_test=m0["n_test"],
                   n_tokens=m0["n_tokens"], skip_edges=m0["skip_edges"],
                   graphs=m0["graphs_with_skip_edges"])]
    ev = {r["method"]: r["metrics"] for r in evals}
    if "graphcrf-chain" in ev and "chaincrf" in ev:
        ratio = ev["graphcrf-chain"]["ratio"]
        ok = "met" if ratio <= CHAIN_RATIO else "NOT met"
        lines.append(f"**GraphCRF on chains: {ratio:.2f}x ChainCRF's time per evaluation "
                     f"({num(1e3 * ev['graphcrf-chain']['value_and_grad_s'])} against "
                     f"{num(1e3 * ev['chaincrf']['value_and_grad_s'])} ms; target at most "
                     f"{CHAIN_RATIO:g}x: {ok}).**")
    if "graphcrf-skip" in by and "chaincrf" in by:
        d = 100 * (by["graphcrf-skip"]["metrics"]["f1"] - by["chaincrf"]["metrics"]["f1"])
        lines.append(f"**Skip chain against the chain CRF: F1 {d:+.2f} points "
                     f"({'a gain' if d > 0 else 'no gain'}).**")
    lines.append("")
    lines += table(("method", "F1", "token accuracy", "fit s", "evaluations",
                    "ms per evaluation", "objective", "converged"),
                   [(r["method"], f"{100 * m['f1']:.2f}", f"{100 * m['test_accuracy']:.2f}",
                     num(m["fit_s"]), r["evaluations"], num(1e3 * m["s_per_evaluation"]),
                     num(r["final_objective"], ".8g"), r["reached"])
                    for r in recs for m in [r["metrics"]]])
    return lines + [""]


def _scaling(recs: list[dict]) -> list[str]:
    if not recs:
        return []
    lines = [prose("graphcrf", "scaling"), ""]
    lines += table(("grid", "nodes", "treewidth", "cliques", "ms per graph"),
                   [(r["dataset"].split("/")[1], m["nodes"], m["treewidth"], m["cliques"],
                     num(1e3 * m["seconds_per_graph"]))
                    for r in sorted(recs, key=lambda r: (r["metrics"]["rows"],
                                                         r["metrics"]["length"]))
                    for m in [r["metrics"]]])
    return lines + [""]


def report(doc: dict, out: Path) -> str:
    recs = doc.get("records", [])
    by_task = {t: [r for r in recs if r["task"] == t]
               for t in ("inference", "inference-medium", "skip-chain", "evaluation",
                         "scaling")}
    lines = [prose("graphcrf", "intro"), ""]
    lines += _inference(by_task["inference"], doc)
    lines += _medium(by_task["inference-medium"])
    lines += _skip_chain(by_task["skip-chain"], by_task["evaluation"])
    lines += _scaling(by_task["scaling"])
    return "\n".join(lines)
