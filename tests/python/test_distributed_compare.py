"""`python -m opdump compare` across processes and nodes (torch.distributed's store, loopback):
each dump rank compared once by a process that sees its files, one report naming the global first
divergence, the same as one process comparing everything."""
import json
import os
import shutil
import socket
import subprocess

import pytest

from conftest import BUILD, PYTHON

HEADER = ("Op Type,Op Name,Task ID,Stream ID,Timestamp,IO,Slot,Data Size,Data Type,Shape,Max Value,Min Value,"
          "L2Norm Value\n")
OPS = 60


def write_rank(root, rank, changed_task=None):
    """Statistics of one rank's iteration 0: OPS linear ops, one of them changed in the target."""
    for side in ("target", "reference"):
        folder = root / side / f"rank_{rank}" / "net" / "0" / "0"
        folder.mkdir(parents=True)
        rows = [HEADER]
        for task in range(OPS):
            top = 2.5 if side == "target" and task == changed_task else 1.0 + rank
            for io in ("input", "output"):
                rows.append(f"linear,Default/net-Net/layer{task}-Linear/linear-op0,{task},0,{1000 + task},{io},0,64,"
                            f"float32,\"(4,4)\",{top if io == 'output' else 1.0},-1.0,2.0\n")
        (folder / "statistic.csv").write_text("".join(rows))


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def launch(cwds, args):
    """One process per entry of `cwds` (its working folder: its "node"), as torchrun would start them."""
    port = free_port()
    procs = []
    for rank, cwd in enumerate(cwds):
        env = dict(os.environ, PYTHONPATH=str(BUILD / "python"), RANK=str(rank), WORLD_SIZE=str(len(cwds)),
                   MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port), USE_LIBUV="0")
        procs.append(subprocess.Popen([PYTHON, "-m", "opdump", "compare", *args], cwd=cwd, env=env,
                                      stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True))
    return [(p.wait(timeout=300), p.stdout.read(), p.stderr.read()) for p in procs]


def single_process(run, root, out):
    run("compare", root / "target", root / "reference", "-o", out, "-q", check=0)
    return json.loads((out / "compare_summary.json").read_text())


def test_two_nodes_each_with_its_own_ranks(run, tmp_path):
    # node A holds ranks 0 and 1, node B ranks 2 and 3; rank 2 parts first (task 10), rank 0 later (task 40)
    node_a, node_b, together = tmp_path / "a", tmp_path / "b", tmp_path / "together"
    for rank, changed in ((0, 40), (1, None)):
        write_rank(node_a / "dump", rank, changed)
        write_rank(together, rank, changed)
    for rank, changed in ((2, 10), (3, None)):
        write_rank(node_b / "dump", rank, changed)
        write_rank(together, rank, changed)
    results = launch([node_a, node_a, node_b, node_b], ["dump/target", "dump/reference", "-o", "out", "-q"])
    assert all(code == 0 for code, _, _ in results), results
    assert "first divergence: linear Default/net-Net/layer10-Linear/linear-op0 (forward, rank 2, iteration 0)" in results[0][1]

    merged = json.loads((node_a / "out" / "compare_summary.json").read_text())
    assert merged["ranks"] == [0, 1, 2, 3] and merged["processes"] == 4
    assert [p["ranks"] for p in merged["parts"]] == [[0], [1], [2], [3]]  # each rank once, by a process that sees it
    assert [p["host"] for p in merged["parts"]] == [socket.gethostname()] * 4
    first = merged["first_divergence"]
    assert (first["rank"], first["op_name"]) == (2, "Default/net-Net/layer10-Linear/linear-op0")
    # the same answer and counts as one process comparing all four ranks
    alone = single_process(run, together, tmp_path / "alone")
    assert (alone["first_divergence"]["rank"], alone["first_divergence"]["op_name"]) == (first["rank"], first["op_name"])
    for key in ("rows", "pass", "warning", "error", "not_compared"):
        assert merged[key] == alone[key], key
    csv_rows = (node_a / "out" / "compare_result.csv").read_text().splitlines()
    assert len(csv_rows) == 1 + alone["rows"]
    assert "layer10-Linear" in (node_a / "out" / "compare_report.html").read_text()
    # the parts of node B are on node B
    assert (node_b / "out" / "parts" / "process_2" / "compare_report.html").exists()
    assert not (node_b / "out" / "compare_summary.json").exists()


def test_a_shared_folder_compares_each_rank_once(run, tmp_path):
    for rank, changed in ((0, None), (1, 30), (2, None), (3, 5)):
        write_rank(tmp_path / "dump", rank, changed)
    results = launch([tmp_path] * 3, ["dump/target", "dump/reference", "-o", "out", "-q", "--fail-on", "error"])
    codes = {code for code, _, _ in results}
    merged = json.loads((tmp_path / "out" / "compare_summary.json").read_text())
    alone = single_process(run, tmp_path / "dump", tmp_path / "alone")
    assert sorted(r for p in merged["parts"] for r in p["ranks"]) == [0, 1, 2, 3]
    assert sorted(len(p["ranks"]) for p in merged["parts"]) == [1, 1, 2]
    assert merged["rows"] == alone["rows"] and merged["error"] == alone["error"] > 0
    assert codes == {3}  # --fail-on error: every process says so
    assert (merged["first_divergence"]["rank"], merged["first_divergence"]["op_name"]) == (
        3, "Default/net-Net/layer5-Linear/linear-op0") == (alone["first_divergence"]["rank"],
                                                          alone["first_divergence"]["op_name"])


def test_a_process_that_fails_fails_them_all(tmp_path):
    write_rank(tmp_path / "dump", 0, None)
    (tmp_path / "dump" / "target" / "rank_0" / "net" / "0" / "0" / "statistic.csv").write_text("not,a\nstatistic")
    results = launch([tmp_path] * 2, ["dump/target", "dump/reference", "-o", "out", "-q"])
    assert {code for code, _, _ in results} == {1}, results


def test_a_process_alone_says_it_could_not_reach_the_others(tmp_path):
    write_rank(tmp_path / "dump", 0, None)
    env = dict(os.environ, PYTHONPATH=str(BUILD / "python"), RANK="1", WORLD_SIZE="2", MASTER_ADDR="127.0.0.1",
               MASTER_PORT=str(free_port()), USE_LIBUV="0", OPDUMP_COMPARE_TIMEOUT_S="3")
    proc = subprocess.run([PYTHON, "-m", "opdump", "compare", "dump/target", "dump/reference", "-o", "out"],
                          cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 1, proc
    assert "process 1 of 2 could not reach the others (MASTER_ADDR=127.0.0.1" in proc.stderr, proc.stderr
    assert not (tmp_path / "out").exists()


def test_a_process_that_vanishes_is_waited_for_until_the_timeout(tmp_path):
    # process 1 joins the store and exits without comparing: process 0 says so instead of hanging
    write_rank(tmp_path / "dump", 0, None)
    env = dict(os.environ, PYTHONPATH=str(BUILD / "python"), WORLD_SIZE="2", MASTER_ADDR="127.0.0.1",
               MASTER_PORT=str(free_port()), USE_LIBUV="0", OPDUMP_COMPARE_TIMEOUT_S="5")
    first = subprocess.Popen([PYTHON, "-m", "opdump", "compare", "dump/target", "dump/reference", "-o", "out"],
                             cwd=tmp_path, env=dict(env, RANK="0"), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                             text=True)
    joiner = "import torch.distributed as d; next(d.rendezvous('env://'))"
    subprocess.run([PYTHON, "-c", joiner], env=dict(env, RANK="1"), check=True, timeout=120)
    _, err = first.communicate(timeout=120)
    assert first.returncode == 1, err
    assert "process 0 of 2 gave up waiting for the others (OPDUMP_COMPARE_TIMEOUT_S=5)" in err, err
    assert not (tmp_path / "out" / "compare_summary.json").exists()
