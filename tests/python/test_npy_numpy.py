"""npy files written by opdump load in numpy with identical values, and npy files written by
numpy (every dtype, header versions 1.0, 2.0, 3.0) are read by opdump."""
import subprocess

import numpy as np
import pytest

DTYPES = ["bool", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64",
          "float16", "float32", "float64", "complex64", "complex128"]


def sample(dtype, shape, seed=0):
    rng = np.random.default_rng(seed)
    n = int(np.prod(shape))
    if dtype == "bool":
        return rng.integers(0, 2, n).astype(bool).reshape(shape)
    if dtype.startswith(("int", "uint")):
        info = np.iinfo(dtype)
        return rng.integers(info.min, info.max, n, dtype=dtype, endpoint=True).reshape(shape)
    if dtype.startswith("complex"):
        return (rng.standard_normal(n) + 1j * rng.standard_normal(n)).astype(dtype).reshape(shape)
    a = rng.standard_normal(n).astype(dtype)
    if n > 4:
        a[1], a[2], a[3] = np.nan, np.inf, -np.inf
    return a.reshape(shape)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", [(), (7,), (2, 3, 5)])
def test_opdump_npy_loads_in_numpy(tmp_path, npy_tool, dtype, shape):
    a = sample(dtype, shape)
    raw = tmp_path / "a.raw"
    raw.write_bytes(a.tobytes())
    out = tmp_path / "a.npy"
    dims = "x".join(map(str, shape)) if shape else "scalar"
    subprocess.run([npy_tool, raw, dtype, dims, out], check=True)
    b = np.load(out)
    assert b.dtype == a.dtype and b.shape == a.shape
    assert b.tobytes() == a.tobytes()


def test_bfloat16_is_saved_as_float32(tmp_path, npy_tool):
    bits = np.array([0x3F80, 0xC000, 0x7FC0, 0x7F80, 0x0001], dtype=np.uint16)  # 1, -2, nan, inf, tiny
    raw = tmp_path / "b.raw"
    raw.write_bytes(bits.tobytes())
    subprocess.run([npy_tool, raw, "bfloat16", "5", tmp_path / "b.npy"], check=True)
    b = np.load(tmp_path / "b.npy")
    assert b.dtype == np.float32
    expected = (bits.astype(np.uint32) << 16).view(np.float32)
    assert b.tobytes() == expected.tobytes()


@pytest.mark.parametrize("version", [(1, 0), (2, 0), (3, 0)])
@pytest.mark.parametrize("dtype", DTYPES)
def test_numpy_npy_read_by_opdump(tmp_path, run, dtype, version):
    a = sample(dtype, (3, 4), seed=1)
    path = tmp_path / "x.npy"
    with open(path, "wb") as f:
        np.lib.format.write_array(f, a, version=version)
    proc = run("stats", path, "--csv", tmp_path / "s.csv", "--categories", "count", check=0)
    assert "wrote 1 row" in proc.stdout
