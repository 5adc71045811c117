"""Hostile files against the built CLI: each is a clear error naming the file (or a warning and the
file passed over), never a crash, a hang or a write outside -o; reports stay inert."""
import csv
import json
import os
import struct

import numpy as np

from test_cli import field, write_bin


def npy_name(op_type, op_name, task, io="output", slot=0):
    return f"{op_type}.{op_name}.{task}.0.1000.{io}.{slot}.DefaultFormat.npy"


def test_bin_whose_byte_count_wraps_is_an_error(run, tmp_path):
    """A FLOAT tensor of 2^62 elements declaring 0 bytes: 2^64 bytes wrap to 0."""
    shape = field(1, 0, 1 << 62)
    tensor = field(1, 0, 1) + field(2, 0, 2) + field(3, 2, shape) + field(6, 0, 0)
    header = field(1, 2, b"2.0") + field(3, 2, tensor) + field(6, 2, b"Default/Add-op1")
    bad = tmp_path / "dump" / "Add.Add-op1.1.0.1000"
    bad.parent.mkdir()
    bad.write_bytes(struct.pack("<Q", len(header)) + header)
    good = tmp_path / "dump" / "Mul.Mul-op2.2.0.1001"
    write_bin(good, [np.ones(3, np.float32)], [np.full(3, 2, np.float32)], op_name="Default/Mul-op2")
    proc = run("stats", tmp_path / "dump")
    assert proc.returncode == 1 and str(bad) in proc.stderr and "overflow 64 bits" in proc.stderr, proc.stderr
    assert "Mul" in proc.stdout  # the good file still summarized
    out = tmp_path / "npy"
    proc = run("convert", tmp_path / "dump", "-o", out)
    assert proc.returncode != 0 and str(bad) in proc.stderr, proc.stderr
    written = sorted(p.name for p in out.rglob("*.npy"))
    assert written and all(name.startswith("Mul") for name in written), written


def test_pipes_and_devices_under_dump_file_names_do_not_hang(run, tmp_path):
    dump = tmp_path / "dump"
    dump.mkdir()
    np.save(dump / npy_name("add", "Default_add-op0", 1), np.ones(4, np.float32))
    os.mkfifo(dump / "mapping.csv")           # read by its fixed name: a pipe would block forever
    os.symlink("/dev/zero", dump / npy_name("mul", "Default_mul-op0", 2))  # a device: an endless read
    outside = tmp_path / "secret.npy"
    np.save(outside, np.arange(3.0))
    os.symlink(outside, dump / npy_name("sub", "Default_sub-op0", 3))   # a link out of the dump
    proc = run("stats", dump)  # conftest's runner fails the test if it does not finish
    assert "add" in proc.stdout and "sub" not in proc.stdout and "mul" not in proc.stdout, proc.stdout
    assert "link out of the dump folder" in proc.stderr, proc.stderr
    assert "mapping.csv" in proc.stderr and "not a regular file" in proc.stderr, proc.stderr


def test_msprobe_pipe_under_construct_json_is_named(run, tmp_path):
    rank = tmp_path / "step0" / "rank0"
    rank.mkdir(parents=True)
    (rank / "dump.json").write_text(json.dumps({"task": "statistics", "level": "L1", "data": {
        "Functional.relu.0.forward": {"output": [{"type": "torch.Tensor", "dtype": "torch.float32", "shape": [2],
                                                  "Max": 1.0, "Min": 0.0, "Mean": 0.5, "Norm": 1.0}]}}}))
    os.mkfifo(rank / "construct.json")
    proc = run("stats", tmp_path)
    assert proc.returncode == 1, proc.stderr
    assert "construct.json" in proc.stderr and "not a regular file" in proc.stderr, proc.stderr


def test_reports_are_inert(run, tmp_path):
    """An op named to break out of the HTML report's script block, and one that a spreadsheet would
    run as a formula."""
    target, reference = tmp_path / "t", tmp_path / "r"
    for d, v in ((target, 1.0), (reference, 2.0)):
        d.mkdir()
        np.save(d / npy_name("add", "<!--<script>alert(1)<", 1), np.full(4, v, np.float32))
        np.save(d / npy_name("=HYPERLINK(1)", "=HYPERLINK(1)", 2), np.full(4, v, np.float32))
    out = tmp_path / "cmp"
    proc = run("compare", target, reference, "-o", out)
    assert proc.returncode == 0, proc.stderr
    html = (out / "compare_report.html").read_text()
    script = html[html.index('<script id="rows-data"'):]
    script = script[:script.index("</script>")]
    assert "<!--" not in script and "<script>" not in script.split(">", 1)[1], script[:200]
    rows = json.loads(script.split(">", 1)[1])
    assert any("<!--<script>alert(1)<" in json.dumps(r) or "<!--<script>alert(1)<" in str(r) for r in rows), rows
    cells = [c for row in csv.reader(open(out / "compare_result.csv")) for c in row]
    assert "'=HYPERLINK(1)" in cells and "=HYPERLINK(1)" not in cells, cells
    assert not any(c.startswith(("=", "+", "@")) for c in cells)
