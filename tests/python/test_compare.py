"""opdump compare: metrics against an independent float64 numpy computation, edge cases,
matching (names, execution order, mapping files), verdicts and the first divergence."""
import csv
import glob
import json
import os
import shutil
import subprocess

import numpy as np
import pytest

from conftest import BUILD, CHROMIUM, chromium_flags, measured_page, ms_config

EPS64 = np.finfo(np.float64).eps


def reference_metrics(x, y):
    x = x.astype(np.float64).ravel()
    y = y.astype(np.float64).ravel()
    bad = ~np.isfinite(x) | ~np.isfinite(y)
    x = np.where(bad, 0, x)
    y = np.where(bad, 0, y)
    d = np.abs(x - y)
    ay = np.abs(y)
    rel = np.where(ay > EPS64, d / np.where(ay > EPS64, ay, 1), 0)
    nx, ny = np.linalg.norm(x), np.linalg.norm(y)
    cos = 1.0 if x.size == 1 or (nx == 0 and ny == 0) else (np.nan if nx == 0 or ny == 0 else min(1.0, x @ y / (nx * ny)))
    return {
        "CosineSimilarity": cos,
        "MaxAbsoluteError": d.max(),
        "MaxRelativeError": rel.max(),
        "MeanRelativeError": rel.mean(),
        "AccumulatedRelativeError": rel.sum(),
        "RelativeEuclideanDistance": 0 if ny <= EPS64 else np.sqrt((d * d).sum() / (y * y).sum()),
        "EuclideanDistance": np.sqrt((d * d).sum()),
        "MeanAbsoluteError": d.mean(),
        "RootMeanSquareError": np.sqrt((d * d).mean()),
        "OneThousandthErrRatio": np.mean(d / (ay + np.finfo(np.float32).eps) < 0.001),
        "FiveThousandthsErrRatio": np.mean(d / (ay + np.finfo(np.float32).eps) < 0.005),
        "SQNR": np.inf if (d * d).sum() == 0 else 10 * np.log10((y * y).sum() / (d * d).sum()),
        "means": (x.mean(), x.std(), y.mean(), y.std()),
    }


def kl_reference(x, y):
    def norm(a):
        a = np.where(np.isfinite(a), a, 0).astype(np.float64).ravel()
        lo, hi = a.min(), a.max()
        a = (a - lo) / (hi - lo) if hi > lo else a
        a = np.maximum(a, np.finfo(np.float32).eps)
        return a / a.sum()
    p, q = norm(x), norm(y)
    return float(np.sum(p * np.log(p / q)))


def compare_files(run, tmp_path, x, y, extra=()):
    np.save(tmp_path / "x.npy", x)
    np.save(tmp_path / "y.npy", y)
    run("compare", tmp_path / "x.npy", tmp_path / "y.npy", "-o", tmp_path / "out", "-q", *extra, check=0)
    rows = list(csv.DictReader(open(tmp_path / "out" / "compare_result.csv")))
    assert len(rows) == 1
    return rows[0]


def check_against_numpy(row, x, y):
    ref = reference_metrics(x, y)
    for key, value in ref.items():
        if key == "means":
            continue
        got = float(row[key])
        if np.isnan(value):
            assert np.isnan(got), key
        elif np.isinf(value):
            assert got == value, key
        else:
            assert got == pytest.approx(value, rel=2e-5, abs=1e-12), key
    mx, sx, my, sy = ref["means"]
    parts = row["StandardDeviation"].replace("(", "").replace(")", "").replace(",", ";").split(";")
    for got, want in zip(map(float, parts), (mx, sx, my, sy)):
        assert got == pytest.approx(want, rel=1e-5, abs=1e-9)


@pytest.mark.parametrize("n", [1, 7, 1000, 3_000_000])
def test_random_data_matches_numpy(run, tmp_path, n):
    rng = np.random.default_rng(n)
    y = rng.standard_normal(n).astype(np.float32)
    x = (y + rng.standard_normal(n).astype(np.float32) * 1e-3).astype(np.float32)
    row = compare_files(run, tmp_path, x, y, ("--kl",))
    check_against_numpy(row, x, y)
    if n > 1:
        assert float(row["KullbackLeiblerDivergence"]) == pytest.approx(kl_reference(x, y), rel=1e-4, abs=1e-9)


def test_nan_inf_at_the_same_positions_count_as_zero(run, tmp_path):
    rng = np.random.default_rng(5)
    y = rng.standard_normal(5000)
    x = y * 1.01
    for i, v in ((3, np.nan), (10, np.inf), (4999, -np.inf)):
        x[i] = v
        y[i] = v
    row = compare_files(run, tmp_path, x, y)
    check_against_numpy(row, x, y)
    assert row["Result"] in ("pass", "warning", "error")


def test_nan_at_different_positions_is_flagged(run, tmp_path):
    y = np.ones(100, np.float32)
    x = y.copy()
    x[7] = np.nan
    row = compare_files(run, tmp_path, x, y)
    assert row["Result"] == "error" and "nan do not match" in row["CompareFailReason"]


def test_zero_tensors_scalars_and_empty(run, tmp_path):
    row = compare_files(run, tmp_path, np.zeros(10, np.float32), np.zeros(10, np.float32))
    assert float(row["CosineSimilarity"]) == 1 and row["Result"] == "pass"
    row = compare_files(run, tmp_path, np.ones(10, np.float32), np.zeros(10, np.float32))
    assert row["CosineSimilarity"] == "NaN" and row["Result"] == "error"
    row = compare_files(run, tmp_path, np.float32(2.0).reshape(()), np.float32(3.0).reshape(()))
    assert float(row["CosineSimilarity"]) == 1 and float(row["MaxAbsoluteError"]) == 1
    row = compare_files(run, tmp_path, np.zeros((0, 3), np.float32), np.zeros((0, 3), np.float32))
    assert row["Result"] == "not compared" and "empty" in row["CompareFailReason"]


def test_shape_mismatch_is_an_error_not_a_crash(run, tmp_path):
    row = compare_files(run, tmp_path, np.ones((2, 3), np.float32), np.ones((3, 2), np.float32))
    assert row["Result"] == "error" and "shape mismatch" in row["CompareFailReason"]


def test_dtype_mismatch_is_compared_after_widening(run, tmp_path):
    y = np.random.default_rng(2).standard_normal(4096).astype(np.float32)
    x = y.astype(np.float16)
    row = compare_files(run, tmp_path, x, y)
    check_against_numpy(row, x, y)
    assert "float16 vs float32" in row["CompareFailReason"]


def test_integer_tensors(run, tmp_path):
    y = np.arange(-50, 50, dtype=np.int64)
    x = y.copy()
    x[0] = -49
    row = compare_files(run, tmp_path, x, y)
    check_against_numpy(row, x, y)


# ---- whole dumps ----------------------------------------------------------------------------

def rows_of(out):
    return list(csv.DictReader(open(out / "compare_result.csv")))


def test_identical_runs_pass_everywhere(workload, run, tmp_path):
    a = workload("small", steps=1, config=ms_config(tmp_path / "a"))
    b = workload("small", steps=1, config=ms_config(tmp_path / "b"))
    proc = run("compare", a["report"]["root"], b["report"]["root"], "-o", tmp_path / "out", "-q", check=0)
    assert "no divergence found" in proc.stdout
    rows = rows_of(tmp_path / "out")
    assert len(rows) > 50
    assert all(r["Match"] == "name" for r in rows)
    assert {r["Result"] for r in rows} <= {"pass", "not compared"}


def test_planted_bug_is_the_first_divergence(workload, run, tmp_path):
    good = workload("small", steps=1, config=ms_config(tmp_path / "good"))
    bad = workload("small", steps=1, config=ms_config(tmp_path / "bad"), env={"OPDUMP_TEST_PLANT_BUG": "1"})
    proc = run("compare", bad["report"]["root"], good["report"]["root"], "-o", tmp_path / "out", "-q", check=0)
    lines = proc.stdout.splitlines()
    line = [l for l in lines if l.startswith("first divergence")][0]
    assert line == ("first divergence: batch_norm Default/net-Small/bn1-BatchNorm2d/batch_norm-op0 "
                    "(forward, rank 0, iteration 0)"), proc.stdout
    # why: bn1's eps is a setting of the op itself; its input (conv1's output) matches. Tensor dumps
    # record the arguments by default, so the setting is named.
    assert lines[lines.index(line) + 1] == ("  why: output 0 differs; argument eps: 0.01 vs 1e-05 (its recorded "
                                            "arguments differ); every input produced by a dumped op matches")
    # the Python line that called it, from the dump's graphs/ file
    called = lines[lines.index(line) + 2]
    assert called.strip().startswith("called from ") and "torch_workload.py:" in called
    summary = json.loads((tmp_path / "out" / "compare_summary.json").read_text())
    first = summary["first_divergence"]
    assert (first["op_name"], first["kind"], first["rank"], first["iteration"], first["data_flow"]) == \
        ("Default/net-Small/bn1-BatchNorm2d/batch_norm-op0", "output", 0, 0, True)
    # what it reaches through data flow: relu, pool, then fc (each fails)
    assert [op["op_type"] for op in first["reaches"][:3]] == ["relu_", "max_pool2d", "linear"]
    html = (tmp_path / "out" / "compare_report.html").read_text()
    assert 'id="first-divergence"' in html and "<svg" in html and "torch_workload.py:" in html


def test_renamed_modules_are_aligned_by_execution_order(workload, run, tmp_path):
    a = workload("small", steps=1, config=ms_config(tmp_path / "a"))
    b = workload("small", steps=1, config=ms_config(tmp_path / "b"), env={"OPDUMP_TEST_RENAME": "1"})
    run("compare", a["report"]["root"], b["report"]["root"], "-o", tmp_path / "out", "-q", check=0)
    rows = rows_of(tmp_path / "out")
    aligned = [r for r in rows if r["Match"] == "aligned"]
    assert aligned and all("conv1-Conv2d" in r["Target"] and "stem-Conv2d" in r["Reference"]
                           for r in aligned if r["OpType"] == "conv2d")
    assert not [r for r in rows if r["Match"].endswith("only")]
    assert {r["Result"] for r in rows} <= {"pass", "not compared"}
    # --no-align lists them as unmatched instead, never drops them
    run("compare", a["report"]["root"], b["report"]["root"], "-o", tmp_path / "out2", "-q", "--no-align", check=0)
    rows2 = rows_of(tmp_path / "out2")
    assert len([r for r in rows2 if r["Match"] == "target only"]) == len(aligned)
    assert len([r for r in rows2 if r["Match"] == "reference only"]) == len(aligned)


def test_mapping_file_matches_renamed_ops(workload, run, tmp_path):
    a = workload("small", steps=1, config=ms_config(tmp_path / "a"))
    b = workload("small", steps=1, config=ms_config(tmp_path / "b"), env={"OPDUMP_TEST_RENAME": "1"})
    (tmp_path / "map.csv").write_text("# conv1 was renamed stem\nname-regex((.*)conv1-Conv2d(.*)),\\1stem-Conv2d\\2\n")
    run("compare", a["report"]["root"], b["report"]["root"], "-o", tmp_path / "out", "-q", "--no-align",
        "--mapping", tmp_path / "map.csv", check=0)
    rows = rows_of(tmp_path / "out")
    assert all(r["Match"] == "name" for r in rows)


def test_statistics_only_dumps_are_compared_on_statistics(workload, run, tmp_path):
    cfg = lambda p: ms_config(p, saved_data="statistic", common={"statistic_category": ["max", "min", "avg", "l2norm"]})
    a = workload("small", steps=1, config=cfg(tmp_path / "a"))
    b = workload("small", steps=1, config=cfg(tmp_path / "b"), env={"OPDUMP_TEST_PLANT_BUG": "1"})
    proc = run("compare", b["report"]["root"], a["report"]["root"], "-o", tmp_path / "out", "-q", check=0)
    rows = rows_of(tmp_path / "out")
    assert rows and all(r["CosineSimilarity"] == "" for r in rows)
    assert "batch_norm" in [l for l in proc.stdout.splitlines() if l.startswith("first divergence")][0]
    assert "no divergence found" not in proc.stdout


def test_thresholds_file_and_bad_input(run, tmp_path):
    y = np.ones(100, np.float32)
    x = y * 1.0001
    (tmp_path / "t.json").write_text(json.dumps({"warning_cosine": 1.1, "warning_max_abs": 0, "warning_rel_euclidean": 1}))
    row = compare_files(run, tmp_path, x, y, ("--thresholds", tmp_path / "t.json"))
    assert row["Result"] == "warning"
    (tmp_path / "bad.json").write_text(json.dumps({"cosine": 0.5}))
    proc = run("compare", tmp_path / "x.npy", tmp_path / "y.npy", "-o", tmp_path / "o2", "--thresholds", tmp_path / "bad.json")
    assert proc.returncode == 1 and "cosine" in proc.stderr
    proc = run("compare", tmp_path / "nope", tmp_path / "y.npy", "-o", tmp_path / "o3")
    assert proc.returncode == 1 and "nope" in proc.stderr


def test_fp32_against_bf16_autocast(workload, run, tmp_path):
    fp32 = workload("small", steps=1, config=ms_config(tmp_path / "fp32"))
    bf16 = workload("small", steps=1, config=ms_config(tmp_path / "bf16"), extra=["--bf16"])
    proc = run("compare", bf16["report"]["root"], fp32["report"]["root"], "-o", tmp_path / "out", "-q", check=0)
    rows = rows_of(tmp_path / "out")
    matched = [r for r in rows if r["Match"] in ("name", "aligned")]
    assert len(matched) > 0.8 * len(rows)
    conv_out = [r for r in matched if r["OpType"] == "conv2d" and r["TensorIndex"] == "output.0"][0]
    assert conv_out["TargetDataType"] == "float32"  # bfloat16 is saved as float32
    # What opdump reports, not what this CPU's bf16 units compute (oneDNN 3.7 on AVX512-BF16 CPUs
    # computes bf16 conv2d with a cosine of 0.88): the reported cosine is the files' own.
    def npy(root, name):
        found = [p for p in glob.glob(os.path.join(root, "**", "*.npy"), recursive=True)
                 if os.path.basename(p).startswith("conv2d." + name.replace("/", "_") + ".") and ".output.0." in p]
        assert len(found) == 1, found
        return np.load(found[0]).astype(np.float64).ravel()
    x, y = npy(bf16["report"]["root"], conv_out["Target"]), npy(fp32["report"]["root"], conv_out["Reference"])
    assert np.all(x.astype(np.float32).view(np.uint32) & 0xFFFF == 0)  # bf16 values, widened exactly
    cosine = float(x @ y / (np.linalg.norm(x) * np.linalg.norm(y)))
    assert float(conv_out["CosineSimilarity"]) == pytest.approx(cosine, abs=1e-9)
    assert cosine < 1.0
    # Across the two stacks the first divergence is an op that adds error beyond bf16's rounding
    # (docs/compare.md, "Across stacks"). Whether this CPU's bf16 conv2d does is measured here, from
    # its own dumped inputs in float64: within bf16's rounding, no divergence is named.
    import torch
    conv_in = lambda i: [r for r in matched if r["Target"] == conv_out["Target"] and r["TensorIndex"] == f"input.{i}"][0]
    def tensor(row):
        p = [p for p in glob.glob(os.path.join(bf16["report"]["root"], "**", "*.npy"), recursive=True)
             if os.path.basename(p).startswith("conv2d." + row["Target"].replace("/", "_") + ".")
             and f".{row['TensorIndex']}." in p][0]
        return torch.from_numpy(np.load(p)).double()
    exact = torch.nn.functional.conv2d(tensor(conv_in(0)), tensor(conv_in(1)), tensor(conv_in(2)), padding=1)
    own = torch.from_numpy(x.reshape(exact.shape))
    strays = float((own - exact).norm() / exact.norm()) > 2 * 2 ** -7
    lines = proc.stdout.splitlines()
    if strays:  # oneDNN 3.7's bf16 conv2d on AVX512-BF16 CPUs: a kernel that strays is named
        assert "first divergence: conv2d Default/net-Small/conv1-Conv2d/conv2d-op0 (forward" in proc.stdout, proc.stdout
    else:
        assert not any(l.startswith("first divergence") for l in lines), proc.stdout
        assert any(l.startswith("no divergence found: outputs agree to bfloat16 precision") for l in lines), proc.stdout
        summary = json.loads((tmp_path / "out" / "compare_summary.json").read_text())
        assert summary["within_precision"] > 0 and summary["precision"].startswith("outputs agree to bfloat16")
        within = [r for r in rows if "within bfloat16 precision" in r["CompareFailReason"]]
        assert len(within) == summary["within_precision"] and all(r["Result"] in ("warning", "error") for r in within)


def test_arguments_that_differ_are_named_in_the_cause(workload, run, tmp_path):
    """With save_kernel_args on both sides, the planted bn1 eps is named as the argument that differs."""
    cfg = lambda p: ms_config(p, e2e={"save_kernel_args": True})
    good = workload("small", steps=1, config=cfg(tmp_path / "good"))
    bad = workload("small", steps=1, config=cfg(tmp_path / "bad"), env={"OPDUMP_TEST_PLANT_BUG": "1"})
    proc = run("compare", bad["report"]["root"], good["report"]["root"], "-o", tmp_path / "out", "-q", check=0)
    lines = proc.stdout.splitlines()
    line = [l for l in lines if l.startswith("first divergence")][0]
    assert "batch_norm Default/net-Small/bn1-BatchNorm2d/batch_norm-op0" in line, proc.stdout
    assert lines[lines.index(line) + 1] == ("  why: output 0 differs; argument eps: 0.01 vs 1e-05 (its recorded "
                                            "arguments differ); every input produced by a dumped op matches"), proc.stdout
    first = json.loads((tmp_path / "out" / "compare_summary.json").read_text())["first_divergence"]
    assert "argument eps: 0.01 vs 1e-05" in first["cause"]
    # the same runs compared with themselves name no argument
    same = run("compare", good["report"]["root"], good["report"]["root"], "-o", tmp_path / "same", "-q", check=0)
    assert "argument " not in same.stdout and "first divergence" not in same.stdout, same.stdout


def test_reports_read_by_pandas_and_openpyxl(workload, run, tmp_path):
    pandas = pytest.importorskip("pandas")
    openpyxl = pytest.importorskip("openpyxl")
    good = workload("small", steps=1, config=ms_config(tmp_path / "good"))
    bad = workload("small", steps=1, config=ms_config(tmp_path / "bad"), env={"OPDUMP_TEST_PLANT_BUG": "1"})
    run("compare", bad["report"]["root"], good["report"]["root"], "-o", tmp_path / "out", "-q", "--xlsx",
        "--rows-per-sheet", "40", check=0)
    df = pandas.read_csv(tmp_path / "out" / "compare_result.csv")
    assert len(df) > 50 and set(df["Result"]) <= {"pass", "warning", "error", "not compared"}
    wb = openpyxl.load_workbook(tmp_path / "out" / "compare_result.xlsx")
    sheets = wb.sheetnames
    assert len(sheets) == (len(df) + 39) // 40  # a new sheet every 40 rows here
    rows = [r for ws in wb.worksheets for r in ws.iter_rows(min_row=2, values_only=True)]
    assert len(rows) == len(df)
    header = [c.value for c in wb.worksheets[0][1]]
    result_col = header.index("Result")
    colors = {}
    for ws in wb.worksheets:
        for r in ws.iter_rows(min_row=2):
            colors.setdefault(r[result_col].value, set()).add(r[result_col].fill.fgColor.rgb)
    assert colors["error"] == {"FFF8CBAD"} and colors.get("warning", {"FFFFE699"}) == {"FFFFE699"}


@pytest.mark.skipif(CHROMIUM is None, reason="Debian's chromium is not installed")
def test_html_report_renders_in_headless_chromium(workload, run, tmp_path):
    good = workload("small", steps=1, config=ms_config(tmp_path / "good"))
    bad = workload("small", steps=1, config=ms_config(tmp_path / "bad"), env={"OPDUMP_TEST_PLANT_BUG": "1"})
    run("compare", bad["report"]["root"], good["report"]["root"], "-o", tmp_path / "out", "-q", check=0)
    page = (tmp_path / "out" / "compare_report.html").as_uri()
    flags = chromium_flags(tmp_path)
    dom = subprocess.run(flags + ["--dump-dom", page], capture_output=True, text=True, timeout=120)
    assert dom.returncode == 0, dom.stderr[-2000:]
    assert "Uncaught" not in dom.stderr and ":CONSOLE" not in dom.stderr, dom.stderr[-2000:]
    assert '<svg id="chart"' in dom.stdout and 'id="first-divergence"' in dom.stdout
    assert "bn1-BatchNorm2d/batch_norm" in dom.stdout
    shot = subprocess.run(flags + ["--window-size=1400,900", f"--screenshot={tmp_path / 'report.png'}", page],
                          capture_output=True, text=True, timeout=120)
    assert shot.returncode == 0
    png = (tmp_path / "report.png").read_bytes()
    assert png[:8] == b"\x89PNG\r\n\x1a\n" and len(png) > 20000  # a chart, not a blank page

    # Laid out at 1400x900: measured in the browser, by a script added to a copy of the page.
    m = measured_page(tmp_path / "out" / "compare_report.html", MEASURE, tmp_path)
    assert m["width"] == 1400
    assert m["scrollWidth"] <= m["width"], m  # no horizontal scrolling
    for column in ("result", "cosine", "rel euclidean", "reason"):
        assert 0 < m["columns"][column] <= m["width"], (column, m)
    assert m["legend"] >= 4  # line, error, warning, first divergence explained
    assert m["link"] == "#first-row" and m["firstRow"]["present"]
    assert m["firstRow"]["background"] not in (m["errorRowBackground"], "rgba(0, 0, 0, 0)"), m
    assert m["firstRow"]["fontWeight"] in ("700", "bold")


@pytest.mark.skipif(CHROMIUM is None, reason="Debian's chromium is not installed")
def test_html_report_of_100000_rows_draws_a_page_at_a_time(run, tmp_path):
    """Statistics of 100,000 tensors a side, one op changed far down: the page opens on the first
    divergence with one page of rows in the DOM, every row reachable through the pager and the filter."""
    n, changed = 100_000, 73_456
    header = "Op Type,Op Name,Task ID,Stream ID,Timestamp,IO,Slot,Data Size,Data Type,Shape,Max Value,Min Value,L2Norm Value\n"
    for side in ("target", "reference"):
        folder = tmp_path / side / "rank_0" / "net" / "0" / "0"
        folder.mkdir(parents=True)
        lines = [header]
        for i in range(n):
            top = 1.5 if side == "target" and i == changed else 1.0
            lines.append(f"linear,Default/net-Net/layer{i}-Linear/linear-op0,{i},0,{1000 + i},output,0,64,float32,"
                         f"\"(4,4)\",{top},-1.0,2.0\n")
        (folder / "statistic.csv").write_text("".join(lines))
    run("compare", tmp_path / "target", tmp_path / "reference", "-o", tmp_path / "out", "-q", check=0)
    report = tmp_path / "out" / "compare_report.html"
    assert report.stat().st_size < 200 * n  # the rows as compact data (rows of table markup took 400 bytes each)
    probe = """<script>
window.addEventListener('load', () => {
  const out = {rows: document.querySelectorAll('#rows tbody tr').length, page: document.getElementById('page').textContent,
    first: document.getElementById('first-row') ? document.getElementById('first-row').cells[5].textContent : null,
    points: (document.querySelector('#chart path').getAttribute('d').match(/L/g) || []).length};
  const filter = document.getElementById('filter');
  filter.value = 'layer99999-';
  filter.dispatchEvent(new Event('input'));
  out.filtered = [...document.querySelectorAll('#rows tbody tr')].map(tr => tr.cells[5].textContent);
  const pre = document.createElement('pre'); pre.id = 'measure'; pre.textContent = JSON.stringify(out);
  document.body.appendChild(pre);
});
</script>"""
    m = measured_page(report, probe, tmp_path, budget_ms=10000)
    assert m["rows"] == 200 and m["page"].endswith(f"of {n}")
    assert m["first"] == f"Default/net-Net/layer{changed}-Linear/linear-op0"  # opened on its page
    assert m["points"] <= 2000
    assert m["filtered"] == ["Default/net-Net/layer99999-Linear/linear-op0"]


# Added to the report's copy: the layout as the browser computed it, as JSON in <pre id="measure">.
MEASURE = """<script>
window.addEventListener('load', () => {
  const ths = [...document.querySelectorAll('#rows th')];
  const columns = {};
  for (const th of ths) columns[th.textContent] = th.getBoundingClientRect().right;
  const first = document.getElementById('first-row');
  const error = document.querySelector('#rows tr.error:not(#first-row)');
  const link = document.getElementById('first-link');
  const out = {width: window.innerWidth, scrollWidth: document.documentElement.scrollWidth, columns,
    legend: document.querySelectorAll('#legend span').length, link: link ? link.getAttribute('href') : null,
    firstRow: {present: !!first, background: first ? getComputedStyle(first.cells[0]).backgroundColor : null,
               fontWeight: first ? getComputedStyle(first.cells[0]).fontWeight : null},
    errorRowBackground: error ? getComputedStyle(error.cells[0]).backgroundColor : null};
  const pre = document.createElement('pre');
  pre.id = 'measure';
  pre.textContent = JSON.stringify(out);
  document.body.appendChild(pre);
});
</script>"""


def test_kernel_names_of_another_device_are_aligned(workload, run, tmp_path):
    """Kernel-level dumps name device kernels (mkldnn_convolution on CPU, cudnn_convolution on
    CUDA): a CPU dump renamed the CUDA way must still line up op for op."""
    cfg = lambda p: ms_config(p, level="kernel")
    a = workload("small", steps=1, config=cfg(tmp_path / "a"))
    b = workload("small", steps=1, config=cfg(tmp_path / "b"))
    folder = os.path.join(b["report"]["root"], "net", "0", "0")
    renamed = 0
    for name in os.listdir(folder):
        if "mkldnn_convolution" in name:
            os.rename(os.path.join(folder, name), os.path.join(folder, name.replace("mkldnn_convolution", "cudnn_convolution")))
            renamed += 1
    assert renamed > 0
    run("compare", a["report"]["root"], b["report"]["root"], "-o", tmp_path / "out", "-q", check=0)
    rows = rows_of(tmp_path / "out")
    conv = [r for r in rows if "convolution" in r["OpType"] and "mkldnn" in r["Target"]]
    assert conv and all(r["Match"] == "aligned" and "cudnn_convolution" in r["Reference"] for r in conv)
    assert {r["Result"] for r in conv} == {"pass"}


def test_fail_on_gates_a_ci_job(workload, run, tmp_path):
    good = workload("small", steps=1, config=ms_config(tmp_path / "good"))
    same = workload("small", steps=1, config=ms_config(tmp_path / "same"))
    bad = workload("small", steps=1, config=ms_config(tmp_path / "bad"), env={"OPDUMP_TEST_PLANT_BUG": "1"})
    # without --fail-on a divergence is a finding, not a failure of the tool
    run("compare", bad["report"]["root"], good["report"]["root"], "-o", tmp_path / "o1", "-q", check=0)
    proc = run("compare", bad["report"]["root"], good["report"]["root"], "-o", tmp_path / "o2", "-q",
               "--fail-on", "warning", check=3)
    assert "--fail-on warning" in proc.stderr
    summary = json.loads((tmp_path / "o2" / "compare_summary.json").read_text())
    assert summary["error"] + summary["warning"] > 0  # the reports are written all the same
    run("compare", same["report"]["root"], good["report"]["root"], "-o", tmp_path / "o3", "-q",
        "--fail-on", "warning", check=0)
    run("compare", same["report"]["root"], good["report"]["root"], "-o", tmp_path / "o4", "--fail-on", "never",
        check=2)


def test_a_file_against_a_folder_or_unrelated_dumps_are_errors(workload, run, tmp_path):
    good = workload("small", steps=1, config=ms_config(tmp_path / "good"))
    a_file = next(p for p in (tmp_path / "good").rglob("*.npy"))
    proc = run("compare", a_file, good["report"]["root"], "-o", tmp_path / "o", check=1)
    assert "compare two files or two dumps" in proc.stderr
    other = tmp_path / "other"
    other.mkdir()
    np.save(other / "something_else.npy", np.ones(3, np.float32))
    np.save(other / "and_more.npy", np.ones(4, np.float32))
    proc = run("compare", other, good["report"]["root"], "-o", tmp_path / "o", check=1)
    assert "has a partner" in proc.stderr
    assert not (tmp_path / "o" / "compare_result.csv").exists()  # nothing half-written


def test_rows_and_summary_carry_rank_and_iteration(workload, run, tmp_path):
    good = workload("small", steps=2, config=ms_config(tmp_path / "good", iteration="1"))
    bad = workload("small", steps=2, config=ms_config(tmp_path / "bad", iteration="1"),
                   env={"OPDUMP_TEST_PLANT_BUG": "1"})
    run("compare", bad["report"]["root"], good["report"]["root"], "-o", tmp_path / "out", "-q", check=0)
    rows = rows_of(tmp_path / "out")
    assert {(r["Rank"], r["Iteration"]) for r in rows} == {("0", "1")}
    first = json.loads((tmp_path / "out" / "compare_summary.json").read_text())["first_divergence"]
    # only iteration 1 was dumped: iteration 0's update already changed the weights, so the first
    # op reading one is named, with the weight (made by no dumped op) as the reason
    assert (first["rank"], first["iteration"], first["op_type"]) == (0, 1, "conv2d")
    assert "input 1 (parameter net.conv1.weight) differs: no dumped op produced it" in first["cause"], first
    html = (tmp_path / "out" / "compare_report.html").read_text()
    assert 'href="#first-row"' in html and "rank 0, iteration 1" in html


def test_cross_replay_handoff_and_a_replay_program_that_cannot_start(workload, run, tmp_path):
    """Both dumps recorded arguments: `opdump compare` runs in opdump_replay (cross-replay). Where that
    program cannot start (a PyTorch that does not load), compare still compares, without it, and says so."""
    a = workload("small", steps=1, config=ms_config(tmp_path / "a"))
    b = workload("small", steps=1, config=ms_config(tmp_path / "b"), env={"OPDUMP_TEST_PLANT_BUG": "1"})
    proc = run("compare", b["report"]["root"], a["report"]["root"], "-o", tmp_path / "with", "-q", check=0)
    notes = json.loads((tmp_path / "with" / "compare_summary.json").read_text())["notes"]
    assert any(n.startswith("cross-replay: re-ran ") for n in notes), notes
    assert "batch_norm Default/net-Small/bn1-BatchNorm2d/batch_norm-op0" in proc.stdout
    # the same CLI beside an opdump_replay whose interpreter does not exist: exec fails in the child
    alone = tmp_path / "bin"
    alone.mkdir()
    shutil.copy(BUILD / "opdump", alone / "opdump")
    (alone / "opdump_replay").write_text("#!/nonexistent/interpreter\n")
    (alone / "opdump_replay").chmod(0o755)
    broken = subprocess.run([str(alone / "opdump"), "compare", b["report"]["root"], a["report"]["root"], "-o",
                             str(tmp_path / "without"), "-q"], capture_output=True, text=True, timeout=600)
    assert broken.returncode == 0, broken.stderr
    assert "could not start: comparing without cross-replay" in broken.stderr
    assert "batch_norm Default/net-Small/bn1-BatchNorm2d/batch_norm-op0" in broken.stdout
    notes = json.loads((tmp_path / "without" / "compare_summary.json").read_text())["notes"]
    assert not any(n.startswith("cross-replay") for n in notes), notes
    on = subprocess.run([str(alone / "opdump"), "compare", b["report"]["root"], a["report"]["root"], "-o",
                         str(tmp_path / "on"), "-q", "--replay", "on"], capture_output=True, text=True, timeout=600)
    assert on.returncode == 1 and "--replay on: " in on.stderr and "could not start" in on.stderr
