"""statistic.csv and `opdump stats` agree with statistics computed by numpy in float64."""
import csv
import hashlib
import pathlib

import numpy as np
import pytest


def numpy_stats(a):
    x = a.astype(np.complex128) if np.iscomplexobj(a) else a.astype(np.float64)
    if np.iscomplexobj(x):
        nan = np.isnan(x.real) | np.isnan(x.imag)
        inf = ~nan & (np.isinf(x.real) | np.isinf(x.imag))
        mag = np.abs(np.where(nan | inf, 0, x))
        finite = mag[~(nan | inf)]
        return {"Count": x.size, "NaN Count": int(nan.sum()), "Positive Inf Count": int(inf.sum()),
                "Negative Inf Count": 0, "finite": finite}
    finite = x[np.isfinite(x)]
    return {
        "Count": x.size,
        "NaN Count": int(np.isnan(x).sum()),
        "Positive Inf Count": int(np.isposinf(x).sum()),
        "Negative Inf Count": int(np.isneginf(x).sum()),
        "Negative Zero Count": int((x < 0).sum()),
        "Positive Zero Count": int((x > 0).sum()),
        "Zero Count": int((x == 0).sum()),
        "finite": finite,
    }


def check_row(row, a):
    ref = numpy_stats(a)
    for key in ("Count", "NaN Count", "Positive Inf Count", "Negative Inf Count", "Negative Zero Count",
                "Positive Zero Count", "Zero Count"):
        if key in row and key in ref:
            assert int(row[key]) == ref[key], key
    finite = ref["finite"]
    if finite.size == 0:
        for key in ("Max Value", "Min Value", "Avg Value", "L2Norm Value"):
            if key in row:
                assert row[key] == "null", key
        return
    if "Max Value" in row:
        assert float(row["Max Value"]) == pytest.approx(finite.max(), rel=1e-7)
    if "Min Value" in row:
        assert float(row["Min Value"]) == pytest.approx(finite.min(), rel=1e-7)
    if "Avg Value" in row:
        assert float(row["Avg Value"]) == pytest.approx(finite.mean(), rel=1e-6, abs=1e-9)
    if "L2Norm Value" in row:
        assert float(row["L2Norm Value"]) == pytest.approx(np.sqrt((finite ** 2).sum()), rel=1e-6)
    if "MD5" in row:
        assert row["MD5"] == hashlib.md5(np.ascontiguousarray(a).tobytes()).hexdigest()


ARRAYS = {
    "f32_specials": lambda r: np.concatenate([r.standard_normal(100_000).astype(np.float32),
                                             np.array([np.nan, np.inf, -np.inf, 0.0, -0.0], np.float32)]),
    "f64": lambda r: r.standard_normal(5001) * 1e3,
    "f16": lambda r: np.concatenate([r.standard_normal(3000).astype(np.float16), np.array([65504, -np.inf], np.float16)]),
    "i32": lambda r: r.integers(-1000, 1000, 777).astype(np.int32),
    "u8": lambda r: r.integers(0, 255, 300).astype(np.uint8),
    "bool": lambda r: r.integers(0, 2, 99).astype(bool),
    "all_nan": lambda r: np.full(10, np.nan, np.float32),
    "empty": lambda r: np.zeros((0, 3), np.float32),
    "c64": lambda r: (r.standard_normal(50) + 1j * r.standard_normal(50)).astype(np.complex64),
}


def test_opdump_stats_matches_numpy(tmp_path, run):
    rng = np.random.default_rng(3)
    arrays = {name: make(rng) for name, make in ARRAYS.items()}
    for name, a in arrays.items():
        np.save(tmp_path / f"{name}.npy", a)
    out = tmp_path / "out.csv"
    run("stats", tmp_path, "--csv", out, "--categories", "all", check=0)
    rows = list(csv.DictReader(open(out)))
    assert len(rows) == len(arrays)
    for row in rows:
        name = pathlib.Path(row["Op Name"]).stem
        check_row(row, arrays[name])


def test_demo_statistic_csv_equals_numpy_of_its_npy_files(tmp_path, run):
    run("demo", "--no-torch", "-o", tmp_path / "demo", check=0)
    csvs = list((tmp_path / "demo").rglob("statistic.csv"))
    assert len(csvs) == 2  # iterations 1 and 2
    checked = 0
    for stat in csvs:
        for row in csv.DictReader(open(stat)):
            name = (f"{row['Op Type']}.{row['Op Name'].replace('/', '_')}.{row['Task ID']}.{row['Stream ID']}."
                    f"{row['Timestamp']}.{row['IO']}.{row['Slot']}.DefaultFormat.npy")
            a = np.load(stat.parent / name)
            assert row["Shape"] == "(" + ",".join(map(str, a.shape)) + ")"
            assert int(row["Data Size"]) == a.nbytes
            check_row(row, a)
            checked += 1
    assert checked == 16
