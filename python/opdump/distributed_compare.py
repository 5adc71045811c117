"""`python -m opdump compare ...` under torchrun (or any launcher that sets RANK and WORLD_SIZE): a
compare split across processes and nodes, where each dump rank is compared by one process that
can read its files (on its node's disk, or a shared one), and the results are gathered through
torch.distributed's key-value store (the launcher's, or one process 0 serves; found the way
init_process_group("env://") finds it) into one report on the process of rank 0, naming the
global first divergence: which rank, which op. No process group is made: a few small messages do
not need one, and tearing a gloo group down can deadlock on the GIL (torch 2.6).

Each process runs the opdump CLI on its ranks (OUT/parts/process_{RANK}/, with its own HTML
report); process 0 writes OUT/compare_summary.json, OUT/compare_result.csv and
OUT/compare_report.html over all of them. Every process exits with the same code: 1 when a part
failed, 3 when --fail-on found rows, else 0."""
import argparse
import datetime
import html
import json
import os
import socket
import subprocess
import sys

# How long a process waits for the others: each compares its ranks first, which takes as long as its
# share of the dump (OPDUMP_COMPARE_TIMEOUT_S to change it).
DEFAULT_TIMEOUT_S = 4 * 3600
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


class _Exchange:
    """Every process posts one message per step under its rank; the store's server (process 0 or the
    launcher) outlives the readers because process 0 leaves only after the others said they left."""

    def __init__(self, store, rank, world):
        self.store, self.rank, self.world = store, rank, world

    def post(self, step, value):
        self.store.set(f"{step}/{self.rank}", json.dumps(value))

    def read(self, step):
        keys = [f"{step}/{p}" for p in range(self.world)]
        self.store.wait(keys)
        return [json.loads(self.store.get(k)) for k in keys]

    def all(self, step, value):
        self.post(step, value)
        return self.read(step)

    def leave(self):
        if self.rank != 0:
            self.store.set(f"left/{self.rank}", "1")
        elif self.world > 1:
            self.store.wait([f"left/{p}" for p in range(1, self.world)])


def _connect(rank, world):
    import torch.distributed as dist
    os.environ.setdefault("USE_LIBUV", "0")  # Debian's torch 2.x has no libuv in its TCP store
    timeout = datetime.timedelta(seconds=float(os.environ.get("OPDUMP_COMPARE_TIMEOUT_S", DEFAULT_TIMEOUT_S)))
    store, _, _ = next(dist.rendezvous("env://", rank=rank, world_size=world, timeout=timeout))
    store.set_timeout(timeout)
    # A launcher's store may outlive this run (torchrun restarts): keys of one attempt stay apart.
    attempt = os.environ.get("TORCHELASTIC_RESTART_COUNT", "0")
    return _Exchange(dist.PrefixStore(f"opdump-compare/{attempt}", store), rank, world)


def main(argv, cli):
    args, rest = _arguments(argv)
    rank, world = int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"])
    try:
        exchange = _connect(rank, world)
    except ImportError as e:
        sys.stderr.write(f"opdump: a compare across {world} processes (WORLD_SIZE) needs torch.distributed: {e}\n")
        return 1
    except (RuntimeError, ValueError, OSError) as e:  # no MASTER_ADDR/MASTER_PORT, or nobody answered in time
        sys.stderr.write(f"opdump: process {rank} of {world} could not reach the others "
                         f"(MASTER_ADDR={os.environ.get('MASTER_ADDR')}, MASTER_PORT={os.environ.get('MASTER_PORT')}): {e}\n")
        return 1
    try:
        return _compare(args, rest, cli, exchange)
    except (RuntimeError, OSError) as e:  # the store's timeout: another process died or is still comparing
        sys.stderr.write(f"opdump: process {rank} of {world} gave up waiting for the others "
                         f"(OPDUMP_COMPARE_TIMEOUT_S={os.environ.get('OPDUMP_COMPARE_TIMEOUT_S', DEFAULT_TIMEOUT_S)}): {e}\n")
        return 1


def _compare(args, rest, cli, exchange):
    rank, world = exchange.rank, exchange.world
    listed = subprocess.run([cli, "compare", args.target, args.reference, "--list-ranks"], capture_output=True, text=True)
    visible = json.loads(listed.stdout) if listed.returncode == 0 else []
    everyone = exchange.all("visible", visible)
    owner = assign(everyone, world)
    mine = [r for r, p in sorted(owner.items()) if p == rank]

    part = {"process": rank, "host": socket.gethostname(), "ranks": mine,
            "output": os.path.abspath(os.path.join(args.output, "parts", f"process_{rank}")), "code": 0}
    if listed.returncode != 0:
        part["code"], part["failure"] = 1, listed.stderr.strip()
    elif mine:
        # Watched from a terminal, this process's compare draws its progress there (and says what failed there).
        shown = sys.stderr.isatty() and "-q" not in rest and "--quiet" not in rest
        proc = subprocess.run([cli, "compare", args.target, args.reference, "-o", part["output"],
                               "--ranks", ",".join(map(str, mine)), *rest], stdout=subprocess.PIPE,
                              stderr=None if shown else subprocess.PIPE, text=True)
        part["code"] = proc.returncode
        if proc.returncode in (0, 3):
            with open(os.path.join(part["output"], "compare_summary.json")) as f:
                part["summary"] = json.load(f)
            with open(os.path.join(part["output"], "compare_result.csv")) as f:
                part["csv"] = f.read()
        else:
            part["failure"] = proc.stderr.strip() if proc.stderr is not None else "its compare failed (see its messages above)"
    exchange.post("part", part)
    parts = exchange.read("part") if rank == 0 else None
    codes = exchange.all("code", part["code"])
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
    exchange.leave()
    return code
