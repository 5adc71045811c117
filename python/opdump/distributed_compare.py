"""`python -m opdump compare ...` under torchrun (or any launcher that sets RANK and WORLD_SIZE): a
compare split across processes and nodes, where each dump rank is compared by one process that
can read its files (on its node's disk, or a shared one), and the results are gathered over
torch.distributed (gloo) into one report on the process of rank 0, naming the global first
divergence: which rank, which op.

Each process runs the opdump CLI on its ranks (OUT/parts/process_{RANK}/, with its own HTML
report); process 0 writes OUT/compare_summary.json, OUT/compare_result.csv and
OUT/compare_report.html over all of them. Every process exits with the same code: 1 when a part
failed, 3 when --fail-on found rows, else 0."""
import argparse
import html
import json
import os
import socket
import subprocess
import sys

COUNTS = ("rows", "pass", "warning", "error", "not_compared", "unmatched", "aligned", "bytes_compared")


def _arguments(argv):
    """TARGET, REF and -o of the compare command line; everything else passes through unchanged."""
    p = argparse.ArgumentParser(prog="python -m opdump compare", add_help=False)
    p.add_argument("target")
    p.add_argument("reference")
    p.add_argument("-o", "--output", required=True)
    p.add_argument("--ranks")
    args, rest = p.parse_known_args(argv)
    if args.ranks is not None:
        raise SystemExit("python -m opdump compare: --ranks is chosen per process in a distributed compare; "
                         "leave it out")
    return args, rest


def assign(visible, world):
    """Which process compares which dump rank: each rank once, by a process that sees its files,
    the processes evenly loaded (the same answer in every process)."""
    load = [0] * world
    owner = {}
    for rank in sorted({r for ranks in visible for r in ranks}):
        candidates = [p for p in range(world) if rank in visible[p]]
        chosen = min(candidates, key=lambda p: (load[p], p))
        owner[rank] = chosen
        load[chosen] += 1
    return owner


def _first(parts):
    """The global first divergence: the earliest (iteration, execution order, rank) of the parts' first
    divergences, the order the single-process compare uses across ranks."""
    found = [p["summary"]["first_divergence"] for p in parts if p.get("summary") and p["summary"].get("first_divergence")]
    if not found:
        return None
    return min(found, key=lambda d: (d["iteration"], d.get("order", 0), d["rank"]))


def _merge_csv(parts):
    header, rows = None, []
    for p in parts:
        lines = (p.get("csv") or "").splitlines(keepends=True)
        if not lines:
            continue
        header = header or lines[0]
        rows.extend(lines[1:])
    return (header or "") + "".join(rows)


def _index_html(summary, parts):
    first = summary["first_divergence"]
    out = ["<!DOCTYPE html><html><head><meta charset=\"utf-8\"><title>opdump compare (distributed)</title>"
           "<style>body{font-family:sans-serif;margin:16px}td,th{border:1px solid #ccc;padding:2px 6px}"
           "table{border-collapse:collapse}#first{border-left:4px solid #d62728;padding-left:8px}</style></head><body>",
           f"<h1>opdump compare: {html.escape(summary['target'])} vs {html.escape(summary['reference'])}</h1>",
           f"<p id=\"summary\">{summary['rows']} rows from {len(summary['ranks'])} ranks on {len(parts)} processes: "
           f"{summary['pass']} pass, {summary['warning']} warning, {summary['error']} error, "
           f"{summary['not_compared']} not compared.</p>"]
    if first:
        out.append(f"<div id=\"first\"><p><b>First divergence</b>: {html.escape(first['headline'])}</p>"
                   f"<p>{html.escape(first.get('cause', ''))}</p></div>")
    else:
        out.append("<p id=\"first\">No divergence found.</p>")
    out.append("<table><tr><th>process</th><th>host</th><th>ranks</th><th>rows</th><th>error</th><th>warning</th>"
               "<th>first divergence</th><th>report</th></tr>")
    for p in parts:
        s = p.get("summary") or {}
        d = s.get("first_divergence")
        out.append(f"<tr><td>{p['process']}</td><td>{html.escape(p['host'])}</td><td>{p['ranks']}</td>"
                   f"<td>{s.get('rows', '')}</td><td>{s.get('error', '')}</td><td>{s.get('warning', '')}</td>"
                   f"<td>{html.escape(d['headline']) if d else ''}</td><td>{html.escape(p['output'])}/compare_report.html"
                   f"{' (' + html.escape(p['failure']) + ')' if p.get('failure') else ''}</td></tr>")
    out.append("</table></body></html>\n")
    return "".join(out)


def _write(path, text):
    tmp = path + ".tmp"
    with open(tmp, "w") as f:
        f.write(text)
    os.replace(tmp, path)


def main(argv, cli):
    try:
        import torch.distributed as dist
    except ImportError as e:
        sys.stderr.write(f"opdump: a compare across {os.environ.get('WORLD_SIZE')} processes (WORLD_SIZE) needs "
                         f"torch.distributed: {e}\n")
        return 1
    args, rest = _arguments(argv)
    rank, world = int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"])
    os.environ.setdefault("USE_LIBUV", "0")  # Debian's torch 2.x has no libuv in its TCP store
    if not dist.is_initialized():
        dist.init_process_group("gloo")

    listed = subprocess.run([cli, "compare", args.target, args.reference, "--list-ranks"], capture_output=True, text=True)
    visible = json.loads(listed.stdout) if listed.returncode == 0 else []
    everyone = [None] * world
    dist.all_gather_object(everyone, visible)
    owner = assign(everyone, world)
    mine = [r for r, p in sorted(owner.items()) if p == rank]

    part = {"process": rank, "host": socket.gethostname(), "ranks": mine,
            "output": os.path.abspath(os.path.join(args.output, "parts", f"process_{rank}")), "code": 0}
    if listed.returncode != 0:
        part["code"], part["failure"] = 1, listed.stderr.strip()
    elif mine:
        proc = subprocess.run([cli, "compare", args.target, args.reference, "-o", part["output"],
                               "--ranks", ",".join(map(str, mine)), *rest], capture_output=True, text=True)
        part["code"] = proc.returncode
        if proc.returncode in (0, 3):
            with open(os.path.join(part["output"], "compare_summary.json")) as f:
                part["summary"] = json.load(f)
            with open(os.path.join(part["output"], "compare_result.csv")) as f:
                part["csv"] = f.read()
        else:
            part["failure"] = proc.stderr.strip()
    parts = [None] * world if rank == 0 else None
    dist.gather_object(part, parts, dst=0)
    codes = [None] * world
    dist.all_gather_object(codes, part["code"])
    code = 1 if any(c not in (0, 3) for c in codes) else 3 if 3 in codes else 0

    if rank == 0:
        for p in parts:
            if p.get("failure"):
                sys.stderr.write(f"opdump: process {p['process']} on {p['host']} (ranks {p['ranks']}): {p['failure']}\n")
        summaries = [p["summary"] for p in parts if p.get("summary")]
        summary = {k: sum(s.get(k, 0) for s in summaries) for k in COUNTS}
        summary.update(target=args.target, reference=args.reference, ranks=sorted(owner),
                       first_divergence=_first(parts), processes=world,
                       parts=[{k: p.get(k) for k in ("process", "host", "ranks", "output", "code", "failure")} |
                              {"first_divergence": (p.get("summary") or {}).get("first_divergence")} for p in parts])
        if not owner:
            sys.stderr.write(f"opdump: no process found ranks that both {args.target} and {args.reference} hold\n")
            code = 1
        os.makedirs(args.output, exist_ok=True)
        _write(os.path.join(args.output, "compare_summary.json"), json.dumps(summary, indent=2) + "\n")
        _write(os.path.join(args.output, "compare_result.csv"), _merge_csv(parts))
        _write(os.path.join(args.output, "compare_report.html"), _index_html(summary, parts))
        first = summary["first_divergence"]
        print(f"compared {summary['rows']} rows of ranks {summary['ranks']} on {world} processes: {summary['pass']} pass, "
              f"{summary['warning']} warning, {summary['error']} error, {summary['not_compared']} not compared")
        if first:
            print(f"first divergence: {first['headline']}\n  why: {first.get('cause', '')}")
        else:
            print("no divergence found")
        print(f"report: {args.output}/compare_report.html\nsummary: {args.output}/compare_summary.json")
    dist.barrier()
    dist.destroy_process_group()
    return code
