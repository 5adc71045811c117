"""The CLI end to end: config check, convert (bin -> npy, npy -> txt), error handling."""
import pathlib
import csv
import json
import struct

import numpy as np
import pytest

SEEDS = pathlib.Path(__file__).resolve().parents[1] / "data" / "configs" / "seeds"


# ---- a bin writer written from the format description, independent of opdump's ------------

def varint(v):
    out = bytearray()
    while v >= 0x80:
        out.append((v & 0x7F) | 0x80)
        v >>= 7
    out.append(v)
    return bytes(out)


def field(num, wire, payload):
    key = varint((num << 3) | wire)
    if wire == 0:
        return key + varint(payload)
    return key + varint(len(payload)) + payload


BIN_TYPES = {np.float32: 1, np.float16: 2, np.int8: 3, np.uint8: 4, np.int32: 7, np.int64: 8, np.float64: 12}


def tensor_msg(a, fmt=2, size_field=5):
    shape = b"".join(field(1, 0, d) for d in a.shape)
    return (field(1, 0, BIN_TYPES[a.dtype.type]) + field(2, 0, fmt) + field(3, 2, shape) +
            field(size_field, 0, a.nbytes))


def write_bin(path, inputs, outputs, op_name="Default/Conv2D-op12"):
    header = field(1, 2, b"2.0") + field(2, 0, 1623124369613540)
    header += b"".join(field(3, 2, tensor_msg(o, size_field=6)) for o in outputs)
    header += b"".join(field(4, 2, tensor_msg(i, size_field=5)) for i in inputs)
    header += field(6, 2, op_name.encode())
    header += field(77, 0, 5)  # a field from a newer toolkit: skipped
    data = b"".join(t.tobytes() for t in inputs) + b"".join(t.tobytes() for t in outputs)
    path.write_bytes(struct.pack("<Q", len(header)) + header + data)


# ---- config check ---------------------------------------------------------------------------

@pytest.mark.parametrize("name", ["seed001_sync.json", "seed001_async.json", "seed002_model_dump.json",
                                  "seed002_single_op_model.json", "seed004_watcher.json", "seed000_session.json"])
def test_config_check_accepts_the_seeds(run, name):
    proc = run("config", "check", SEEDS / name, "--json", check=0)
    assert '"dialect"' in proc.stdout


def test_config_check_rejects_with_location(run):
    proc = run("config", "check", SEEDS / "seed003_ir_mapping_as_printed.json", check=1)
    assert "line 5, column" in proc.stderr


def test_config_check_missing_file(run, tmp_path):
    proc = run("config", "check", tmp_path / "nope.json", check=1)
    assert "nope.json" in proc.stderr


def test_config_check_runs_the_validation_set_dump_runs(run, tmp_path):
    """A name-regex in `layer` that dumping would refuse is refused by the check too (same field)."""
    bad = tmp_path / "bad_layer.json"
    bad.write_text(json.dumps({"dump": {"dump_path": str(tmp_path / "o"),
                                        "dump_list": [{"model_name": "m", "layer": ["name-regex(conv[)"]}]}}))
    proc = run("config", "check", bad, check=1)
    assert "dump.dump_list[0].layer[0]" in proc.stderr and "regular expression" in proc.stderr


def test_config_check_of_a_folder_says_so(run, tmp_path):
    proc = run("config", "check", tmp_path, check=1)
    assert "is a folder" in proc.stderr and "bytes" not in proc.stderr


def test_usage_errors_exit_2(run):
    assert run("convert").returncode == 2
    assert run("no-such-command").returncode == 2


# ---- convert --------------------------------------------------------------------------------

def test_convert_bin_to_npy(tmp_path, run):
    rng = np.random.default_rng(0)
    x = rng.standard_normal((2, 3, 4, 4)).astype(np.float32)
    w = rng.standard_normal((5, 3, 3, 3)).astype(np.float16)
    y = rng.integers(-9, 9, (2, 5)).astype(np.int64)
    name = "Conv2D.Default_network-WithLossCell__backbone-AlexNet_conv3-Conv2d_Conv2D-op12.2.7.161243956333802"
    (tmp_path / "dump").mkdir()
    write_bin(tmp_path / "dump" / name, [x, w], [y])
    run("convert", tmp_path / "dump", "-o", tmp_path / "out", check=0)
    got = sorted(p.name for p in (tmp_path / "out").iterdir())
    assert got == sorted([f"{name}.input.0.2x3x4x4.npy", f"{name}.input.1.5x3x3x3.npy", f"{name}.output.0.2x5.npy"])
    assert np.array_equal(np.load(tmp_path / "out" / f"{name}.input.0.2x3x4x4.npy"), x)
    assert np.array_equal(np.load(tmp_path / "out" / f"{name}.input.1.5x3x3x3.npy"), w)
    assert np.array_equal(np.load(tmp_path / "out" / f"{name}.output.0.2x5.npy"), y)


def test_convert_npy_to_txt_like_numpy_savetxt(tmp_path, run):
    a = np.random.default_rng(1).standard_normal((3, 4)).astype(np.float32)
    (tmp_path / "in").mkdir()
    np.save(tmp_path / "in" / "Pooling.pool1.1147.1589195081588018.output.0.npy", a)
    run("convert", tmp_path / "in", "-o", tmp_path / "out", check=0)
    txt = tmp_path / "out" / "Pooling.pool1.1147.1589195081588018.output.0.txt"
    np.savetxt(tmp_path / "ref.txt", a.flatten())
    assert txt.read_text() == (tmp_path / "ref.txt").read_text()
    assert np.array_equal(np.loadtxt(txt, dtype=np.float32), a.flatten())


def test_convert_txt_of_every_kind_and_length(tmp_path, run):
    rng = np.random.default_rng(2)
    arrays = {  # longer than one widening block (4096 values), integers, bools, float16, complex
        "Add.a.1.2.3.output.0.npy": rng.integers(-2**40, 2**40, 10000, dtype=np.int64),
        "Add.b.1.2.3.output.0.npy": rng.random(5000) < 0.5,
        "Add.c.1.2.3.output.0.npy": rng.standard_normal(4097).astype(np.float16),
        "Add.d.1.2.3.output.0.npy": (rng.standard_normal(5000) + 1j * rng.standard_normal(5000)).astype(np.complex64),
    }
    (tmp_path / "in").mkdir()
    for name, a in arrays.items():
        np.save(tmp_path / "in" / name, a)
    run("convert", tmp_path / "in", "-o", tmp_path / "out", check=0)
    for name, a in arrays.items():
        txt = tmp_path / "out" / name.replace(".npy", ".txt")
        if a.dtype == np.complex64:
            got = np.array([complex(line.strip()) for line in txt.read_text().splitlines()])
            assert np.array_equal(got, a.astype(np.complex128))
        else:
            np.savetxt(tmp_path / "ref.txt", a.astype(np.float64))
            assert txt.read_text() == (tmp_path / "ref.txt").read_text(), name


def test_truncated_bin_is_reported_and_nothing_half_written(tmp_path, run):
    x = np.ones((64,), np.float32)
    (tmp_path / "dump").mkdir()
    write_bin(tmp_path / "dump" / "Add.op.1.0.5", [x], [x])
    good = (tmp_path / "dump" / "Add.op.1.0.5").read_bytes()
    (tmp_path / "dump" / "Add.op.1.0.5").write_bytes(good[:-10])
    # A truncated file no longer looks like a bin: nothing to convert, exit 1.
    proc = run("convert", tmp_path / "dump", "-o", tmp_path / "out")
    assert proc.returncode == 1
    assert not (tmp_path / "out").exists()  # nothing half-written: not even the folder


def test_malformed_npy_names_the_file(tmp_path, run):
    (tmp_path / "bad.npy").write_bytes(b"\x93NUMPY\x01\x00\x10\x00{'descr': '<f4'")
    proc = run("stats", tmp_path / "bad.npy", check=1)
    assert "bad.npy" in proc.stderr and "truncated" in proc.stderr


def test_stats_of_a_bin_file(tmp_path, run):
    x = np.arange(12, dtype=np.float32).reshape(3, 4)
    write_bin(tmp_path / "MatMul.op.0.0.1", [x], [x * 2])
    proc = run("stats", tmp_path / "MatMul.op.0.0.1", check=0)
    lines = proc.stdout.strip().splitlines()
    assert len(lines) == 3
    # the output row: max 22, min 0, mean 11 of x * 2
    cells = lines[2].split()
    assert cells[:8] == ["MatMul.op.0.0.1", "output.0", "float32", "(3,4)", "12", "22", "0", "11"], lines[2]


def test_convert_nc1hwc0_to_nchw_with_shape(tmp_path, run):
    x = np.random.default_rng(4).standard_normal((2, 20, 3, 3)).astype(np.float32)
    c1 = (20 + 15) // 16
    padded = np.zeros((2, c1 * 16, 3, 3), np.float32)
    padded[:, :20] = x
    stored = padded.reshape(2, c1, 16, 3, 3).transpose(0, 1, 3, 4, 2).copy()  # N, C1, H, W, C0
    (tmp_path / "dump").mkdir()
    header = field(1, 2, b"2.0") + field(4, 2, tensor_msg(stored, fmt=3, size_field=5)) + field(6, 2, b"conv")
    (tmp_path / "dump" / "Conv2D.conv.0.0.1").write_bytes(struct.pack("<Q", len(header)) + header + stored.tobytes())
    proc = run("convert", tmp_path / "dump", "-o", tmp_path / "out", "-f", "NCHW")
    assert proc.returncode == 1 and "--shape" in proc.stderr  # no original shape in this header
    run("convert", tmp_path / "dump", "-o", tmp_path / "out2", "-f", "NCHW", "--shape", "2,20,3,3", check=0)
    got = np.load(tmp_path / "out2" / "Conv2D.conv.0.0.1.input.0.2x20x3x3.npy")
    assert np.array_equal(got, x)


def test_convert_that_converts_nothing_leaves_no_folder_behind(tmp_path, run):
    """Every file failing: exit 1 naming the file, and the folders -o asked for are not left empty; a folder that
    was there before stays, as it was."""
    bad = tmp_path / "garbage.npy"
    bad.write_text("not an npy file\n")
    for out in (tmp_path / "out", tmp_path / "new" / "deeper" / "out"):
        proc = run("convert", bad, "-o", out)
        assert proc.returncode == 1 and str(bad) in proc.stderr and "bad magic" in proc.stderr, proc.stderr
        assert "nothing written" in proc.stdout, proc.stdout
    assert sorted(p.name for p in tmp_path.iterdir()) == ["garbage.npy"]
    (tmp_path / "kept").mkdir()
    (tmp_path / "kept" / "earlier.txt").write_text("the user's\n")
    assert run("convert", bad, "-o", tmp_path / "kept").returncode == 1
    assert [p.name for p in (tmp_path / "kept").iterdir()] == ["earlier.txt"]
    # one good file among bad ones: the folder stays with what was converted, and the exit says one failed
    np.save(tmp_path / "good.npy", np.arange(3, dtype=np.float32))
    (tmp_path / "mixed").mkdir()
    for f in ("good.npy", "garbage.npy"):
        (tmp_path / "mixed" / f).write_bytes((tmp_path / f).read_bytes())
    proc = run("convert", tmp_path / "mixed", "-o", tmp_path / "txt")
    assert proc.returncode == 1 and "converted 1 tensor(s)" in proc.stdout, proc.stdout
    assert [p.name for p in (tmp_path / "txt").iterdir()] == ["good.txt"]


def test_compare_pairs_ffts_slices_and_names_without_stream_id(run, tmp_path):
    """CANN's other bin name forms: FFTS+ (sgt) slices pair slice by slice; names without a stream id
    keep their op type, name and task."""
    rng = np.random.default_rng(3)
    for side in ("target", "reference"):
        (tmp_path / side).mkdir()
    a0, a1, b = (rng.standard_normal((4, 4)).astype(np.float32) for _ in range(3))
    for side in ("target", "reference"):
        # slice 1 of the target differs; the slices are written in the other order on the reference side
        order = [("0.0.0.0", a0), ("1.0.0.0", a1 * (1.5 if side == "target" else 1.0))]
        for k, (slice_, x) in enumerate(order if side == "target" else order[::-1]):
            write_bin(tmp_path / side / f"MatMul.Default_MatMul-op3.12.2.16733837280934{k}6.{slice_}", [x], [x + 1],
                      op_name="Default/MatMul-op3")
        write_bin(tmp_path / side / "Add.Default_Add-op4.13.16733837280999", [b], [b], op_name="Default/Add-op4")
    run("compare", tmp_path / "target", tmp_path / "reference", "-o", tmp_path / "out", "-q", check=0)
    rows = list(csv.DictReader(open(tmp_path / "out" / "compare_result.csv")))
    assert len(rows) == 6 and all(r["Match"] == "name" for r in rows), rows
    by_type = {}
    for r in rows:
        by_type.setdefault(r["OpType"], []).append(r["Result"])
    # slice 1's input and output fail, slice 0's pass: each slice met its own partner
    assert by_type["MatMul"].count("pass") == 2 and set(by_type["MatMul"]) - {"pass"} <= {"warning", "error"}
    assert by_type["Add"] == ["pass", "pass"]


def opdebug_record(task, stream, status):
    """The bytes of a CANN overflow record: AI Core info at 256 (model, stream, task, task type),
    its kernel code, block and status at 1024 (the DHA and L2 units left clear)."""
    record = bytearray(1048)
    struct.pack_into("<QQQQ", record, 256, 1, stream, task, 0)
    struct.pack_into("<QQQ", record, 1024, 0x12c0, 3, status)
    return np.frombuffer(bytes(record), dtype=np.uint8)


def test_overflow_reads_cann_opdebug_records(run, tmp_path):
    """Saturation mode: the Mul overflowed but saturated to float16's largest value, so no tensor
    shows it; CANN's Opdebug record does. A record of a task not dumped is reported too, and one
    whose status is clear is not."""
    folder = tmp_path / "dump" / "20260101000000" / "0" / "net" / "1" / "0"
    folder.mkdir(parents=True)
    x = np.ones((2, 2), np.float16)
    write_bin(folder / "Cast.Default_Cast-op1.1.0.100", [x], [x], op_name="Default/Cast-op1")
    write_bin(folder / "Mul.Default_Mul-op2.2.0.200", [x], [np.full((2, 2), 65504, np.float16)], op_name="Default/Mul-op2")
    write_bin(folder / "Add.Default_Add-op3.3.0.300", [x], [x], op_name="Default/Add-op3")
    write_bin(folder / "Opdebug.Node_OpDebug.10.0.400", [], [opdebug_record(2, 0, 0x4)], op_name="Node_OpDebug")
    write_bin(folder / "Opdebug.Node_OpDebug.12.0.600", [], [opdebug_record(3, 0, 0)], op_name="Node_OpDebug")
    (folder / "Opdebug.Node_OpDebug.11.0.500.output.0.json").write_text(json.dumps(  # MindSpore's conversion
        {"DHA Atomic Add": {"model_id": 1, "stream_id": 0, "task_id": 0, "task_type": 0, "pc_start": "0x0",
                            "para_base": "0x0", "status": 0},
         "L2 Atomic Add": {"model_id": 1, "stream_id": 0, "task_id": 0, "task_type": 0, "pc_start": "0x0",
                           "para_base": "0x0", "status": 0},
         "AI Core": {"model_id": 1, "stream_id": 0, "task_id": 7, "task_type": 0, "pc_start": "0x0",
                     "para_base": "0x0", "kernel_code": "0x12c0", "block_idx": 1, "status": 32}}))
    proc = run("overflow", tmp_path / "dump", "--json", tmp_path / "o.json", check=0)
    assert "3 CANN Opdebug records read" in proc.stdout and "2 overflowing ops" in proc.stdout, proc.stdout
    result = json.loads((tmp_path / "o.json").read_text())
    assert [(o["op_name"], o["task_id"]) for o in result["ops"]] == [
        ("Default/Mul-op2", 2), ("task 7 of stream 0 (not dumped)", 7)]
    assert "AI Core status 0x4 in Opdebug.Node_OpDebug.10.0.400" == result["ops"][0]["recorded"]
    assert "AI Core status 0x20" in result["ops"][1]["recorded"]
    assert result["root_cause"]["op_name"] == "Default/Mul-op2"
    # the records are not tensors: compare leaves them out
    run("compare", tmp_path / "dump", tmp_path / "dump", "-o", tmp_path / "cmp", "-q", check=0)
    rows = list(csv.DictReader(open(tmp_path / "cmp" / "compare_result.csv")))
    assert rows and not any("OpDebug" in r["Target"] for r in rows)
