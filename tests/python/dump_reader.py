"""Reads an opdump folder back for the tests: tensors by (op name, io, slot), kernel args, statistics."""
import csv
import glob
import json
import os
import re

import numpy as np


def sanitize(name):
    return re.sub(r"[./\\ \x00-\x1f\x7f]", "_", name)


NPY = re.compile(r"^(?P<type>[^.]+)\.(?P<name>[^.]+)\.(?P<task>\d+)\.(?P<stream>\d+)\.(?P<ts>\d+)\."
                 r"(?P<io>input|output)\.(?P<slot>\d+)\.(?P<fmt>[^.]+)\.npy$")


def tensors(folder):
    """{(op_type, sanitized op name, io, slot): path} of every npy file in a folder."""
    out = {}
    for path in glob.glob(os.path.join(folder, "*.npy")):
        m = NPY.match(os.path.basename(path))
        assert m, path
        out[(m["type"], m["name"], m["io"], int(m["slot"]))] = path
    return out


def kernel_args(folder):
    """Every {op_type}.{op_name}.json of a folder, parsed."""
    return [json.load(open(p)) for p in sorted(glob.glob(os.path.join(folder, "*.json")))]


def statistics(folder):
    path = os.path.join(folder, "statistic.csv")
    return list(csv.DictReader(open(path))) if os.path.exists(path) else []


def load(path):
    return np.load(path)
