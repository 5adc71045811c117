"""Seeds the fuzz corpora: every shipped config, npy files of each dtype and version, bin
files and statistic.csv from a real dump, and mapping csv files.

    PYTHONPATH=build/python /usr/bin/python3 tests/fuzz/make_corpus.py OUT_DIR"""
import glob
import json
import os
import pathlib
import shutil
import subprocess
import sys
import tempfile
import zipfile

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def main(out):
    dirs = {k: os.path.join(out, k) for k in ("config", "npy", "bin", "csv", "opdebug", "pt", "msprobe", "h5")}
    for d in dirs.values():
        os.makedirs(d, exist_ok=True)
    for path in glob.glob(os.path.join(ROOT, "tests/data/configs/**/*.json"), recursive=True) + \
            glob.glob(os.path.join(ROOT, "examples/*.json")):
        shutil.copy(path, dirs["config"])
    for i, dtype in enumerate(["<f4", "<f8", "<f2", "<i8", "<i4", "|u1", "|b1", "<c8", "<u2"]):
        a = (np.arange(12).reshape(3, 4) % 3).astype(dtype)
        np.save(os.path.join(dirs["npy"], f"a{i}.npy"), a)
    np.save(os.path.join(dirs["npy"], "fortran.npy"), np.asfortranarray(np.ones((2, 3), "<f4")))
    np.save(os.path.join(dirs["npy"], "scalar.npy"), np.float32(3))
    np.save(os.path.join(dirs["npy"], "empty.npy"), np.zeros((0, 5), "<f4"))
    with open(os.path.join(dirs["csv"], "mapping.csv"), "w") as f:
        f.write("# target,reference\nDefault/a-op1,Default/b-op1\n\"quoted, name\",x\n")
    # Real dumps: bin files (tensor mode), statistic.csv (statistics mode).
    for file_format, saved_data in (("bin", "tensor"), ("npy", "statistic")):
        with tempfile.TemporaryDirectory() as tmp:
            cfg = {"common_dump_settings": {"dump_mode": 0, "path": tmp, "net_name": "net", "iteration": "all",
                                            "saved_data": saved_data, "input_output": 0, "kernels": [],
                                            "support_device": [0], "op_debug_mode": 0, "file_format": file_format},
                   "e2e_dump_settings": {"enable": file_format == "npy"}}
            cfg_path = os.path.join(tmp, "cfg.json")
            json.dump(cfg, open(cfg_path, "w"))
            code = ("import torch, opdump, sys; opdump.set_dump(sys.argv[1]); m = torch.nn.Sequential("
                    "torch.nn.Conv2d(2, 3, 3), torch.nn.ReLU()); m(torch.randn(1, 2, 5, 5)).sum().backward(); "
                    "opdump.finalize_dump()")
            subprocess.run([sys.executable, "-c", code, cfg_path], check=True)
            for i, path in enumerate(sorted(glob.glob(os.path.join(tmp, "**/*"), recursive=True))):
                base = os.path.basename(path)
                if not os.path.isfile(path) or base.endswith((".json", ".ir")):
                    continue
                if base.endswith(".csv"):
                    shutil.copy(path, os.path.join(dirs["csv"], f"{file_format}{i}_{base}"))
                elif file_format == "bin":
                    shutil.copy(path, os.path.join(dirs["bin"], f"{i}.bin"))
    # CANN Opdebug records: a bin (first byte 0) and MindSpore's JSON (first byte 1), from the test writers.
    sys.path.insert(0, os.path.join(ROOT, "tests", "python"))
    from test_cli import opdebug_record, write_bin
    with tempfile.TemporaryDirectory() as tmp:
        write_bin(pathlib.Path(tmp, "r"), [], [opdebug_record(2, 0, 4)], op_name="Node_OpDebug")
        with open(os.path.join(tmp, "r"), "rb") as f, open(os.path.join(dirs["opdebug"], "record.bin"), "wb") as o:
            o.write(b"\0" + f.read())
    with open(os.path.join(dirs["opdebug"], "record.json"), "wb") as o:
        o.write(b"\1" + json.dumps({"AI Core": {"stream_id": 0, "task_id": 7, "kernel_code": "0x12c0", "status": 32},
                                    "L2 Atomic Add": {"status": 0}}).encode())
    # msprobe: torch.save files of several dtypes, views and a Parameter; a dump.json with its
    # construct.json and stack.json (NUL-separated, as fuzz_msprobe splits them) from a real model.
    import torch
    tensors = {"f32": torch.arange(6, dtype=torch.float32).reshape(2, 3), "bf16": torch.ones(4, dtype=torch.bfloat16),
               "i64": torch.arange(3), "bool": torch.tensor([True, False]), "scalar": torch.tensor(2.5),
               "view": torch.arange(12.).reshape(3, 4)[:, 1:3], "param": torch.nn.Parameter(torch.ones(2))}
    for name, t in tensors.items():
        torch.save(t, os.path.join(dirs["pt"], f"{name}.pt"))
    with tempfile.TemporaryDirectory() as tmp:
        subprocess.run([sys.executable, os.path.join(ROOT, "tests", "python", "msprobe_workload.py"), "--tool", "msprobe",
                        "--out", tmp, "--level", "mix"], check=True, stdout=subprocess.DEVNULL)
        parts = [open(os.path.join(tmp, "step0", "rank0", n), "rb").read()
                 for n in ("dump.json", "construct.json", "stack.json")]
        with open(os.path.join(dirs["msprobe"], "resnet18"), "wb") as o:
            o.write(b"\0".join(parts))
    with open(os.path.join(dirs["msprobe"], "small"), "wb") as o:
        o.write(b'{"task": "statistics", "data": {"Functional.relu.0.forward": {"input_args": [{"type": "torch.Tensor", '
                b'"dtype": "torch.float32", "shape": [2], "Max": NaN, "Min": -Infinity, "Mean": 1.0, "Norm": null}], '
                b'"output": [[{"dtype": "Float32", "shape": [2], "Max": "inf"}]]}}}\0{"Functional.relu.0.forward": '
                b'"Module.a.ReLU.forward.0"}\0{"0": [["Functional.relu.0.forward"], ["File a.py, line 3, in f, \\n x"]]}')
    # .h5 dumps: opdump's (a small model with bfloat16, float16, lists and None arguments) and an
    # h5py-written file in the torch_npu 1.5 dumper's form (float16 widened, no creation order).
    code = ("import torch, opdump, sys; m = torch.nn.Sequential(torch.nn.Conv2d(2, 3, 3), torch.nn.ReLU())\n"
            "with opdump.dumper(use_dump=True, dump_path=sys.argv[1]):\n"
            "    y = m(torch.randn(1, 2, 5, 5)); torch.cat([y.bfloat16(), y.bfloat16()]); y.half().sum(dim=1)\n"
            "    y.sum().backward()\n")
    subprocess.run([sys.executable, "-c", code, os.path.join(dirs["h5"], "opdump.h5")], check=True)
    shutil.rmtree(os.path.join(dirs["h5"], "opdump.opdump"), ignore_errors=True)
    import h5py
    with h5py.File(os.path.join(dirs["h5"], "npu15.h5"), "w") as f:
        d = f.create_dataset("add_Tensor/1/input/self", data=np.ones((2, 3), np.float32))
        for k, v in (("DeviceType", 0), ("DataType", 10), ("FormatType", 0), ("Type", 0)):
            d.attrs[k] = np.int32(v)
        d.attrs["Stride"] = np.array([3, 1], np.int64)
        f.create_dataset("add_Tensor/1/input/alpha", data=np.float64(1)).attrs["Type"] = np.int32(7)
        f.create_dataset("add_Tensor/1/output/result", data=np.ones((2, 3), np.int8)).attrs["DataType"] = np.int32(9)
    # Bare data.pkl records for fuzz_pt's unpickler mode ('P'), and every kept finding as a seed
    # to mutate (the expanded form, 0xFE..., reaches sizes libFuzzer's inputs cannot).
    for path in glob.glob(os.path.join(dirs["pt"], "*.pt")):
        with zipfile.ZipFile(path) as z:
            pkl = [n for n in z.namelist() if n.endswith("/data.pkl")][0]
            with open(path[:-3] + ".pkl", "wb") as o:
                o.write(b"P" + z.read(pkl))
    for target, d in dirs.items():
        for path in glob.glob(os.path.join(ROOT, "tests", "fuzz", "regressions", target, "*")):
            if os.path.getsize(path) <= 65536:
                shutil.copy(path, os.path.join(d, "regression-" + os.path.basename(path)))
    print({k: len(os.listdir(v)) for k, v in dirs.items()})


if __name__ == "__main__":
    main(sys.argv[1])
