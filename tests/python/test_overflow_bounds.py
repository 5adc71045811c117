"""Overflow mode's bound rules on real PyTorch runs: an elementwise op whose operands were checked
(an optimizer's mul_ and add_, a zeroed gradient's accumulation) is known clean from their bounds
without reading its output, and nothing that overflows is missed for it: at the edge of float16's
range, with a planted fault in an optimizer step, and after writes PyTorch's version counter does
not see (`.data`, NumPy)."""
import json
import os
import subprocess
import textwrap

import pytest

from conftest import BUILD, PYTHON


# opdump.dumper with the host checks' placement forced (host_work): `auto` runs overflow checks as each op
# ends, `background` queues them for the background thread, where an op's operands may not be checked yet.
PLACEMENT = """
if PLACEMENT != "auto":
    class _Placed(opdump.dumper):
        def __init__(self, *a, **k):
            super().__init__(*a, **k)
            cfg = json.loads(self._config)
            cfg["opdump"]["host_work"] = PLACEMENT
            self._config = json.dumps(cfg)
    opdump.dumper = _Placed
"""


def run(tmp_path, body, *args, placement="auto"):
    """Runs `body` (Python, with torch, numpy and opdump imported and OUT the dump folder; opdump.dumper
    placing its checks by `placement`); returns what it printed as JSON on its last line."""
    code = ("import json, sys, numpy as np, torch, opdump\nOUT = sys.argv[1]\n" +
            f"PLACEMENT = {placement!r}\n" + PLACEMENT + textwrap.dedent(body))
    proc = subprocess.run([PYTHON, "-c", code, str(tmp_path / "o"), *map(str, args)], capture_output=True, text=True,
                          timeout=600, env=dict(os.environ, PYTHONPATH=str(BUILD / "python")))
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout.splitlines()[-1])


# A training step of an MLP with the optimizer `sys.argv[2]` makes (run() dedents the body it is part of).
TRAINING = """
        torch.manual_seed(0)
        # a 1 MB weight (copied before an op writes it) and a 2 MB one (checked before instead)
        m = torch.nn.Sequential(torch.nn.Linear(64, 4096), torch.nn.ReLU(), torch.nn.Linear(4096, 128))
        opt = eval(sys.argv[2])
        x, y = torch.randn(8, 64), torch.randint(0, 128, (8,))
        def step():
            opt.zero_grad(set_to_none=False)
            torch.nn.functional.cross_entropy(m(x), y).backward()
            opt.step()
"""


# Per parameter and step (after the first), the updates known clean: momentum SGD's mul_, add_ on the
# buffer, add_ on the parameter and the gradient accumulated into its zeroed tensor; Adam's lerp_ or
# mul_/add_ of the first moment, mul_ and addcmul_ of the second, the division of its square root and
# add_ of eps (its sqrt and the parameter's addcdiv_ are read). And the op that updates parameters.
OPTIMIZERS = {"sgd": ("torch.optim.SGD(m.parameters(), lr=0.01, momentum=0.9)", 4, "add_"),
              "adam": ("torch.optim.Adam(m.parameters(), lr=0.01)", 5, "addcdiv_")}


@pytest.mark.parametrize("optimizer", OPTIMIZERS)
@pytest.mark.parametrize("placement", ["auto", "background"])
def test_an_optimizers_updates_are_known_clean_and_a_planted_fault_is_still_found(tmp_path, optimizer, placement):
    make, bounded_per_step, update = OPTIMIZERS[optimizer]
    out = run(tmp_path, TRAINING + """
        with opdump.dumper(check_overflow=True, check_fp16_range=True, dump_path=OUT) as d:
            for _ in range(4):
                step()
            opdump.step()  # (the iteration's checks all counted)
            clean = opdump.counters()
            opt.param_groups[0]["lr"] = 1e12  # every update leaves float16's range, finite in float32
            step()
        print(json.dumps({"clean": clean, "overflows": d.overflows, "root_cause": d.root_cause,
                          "params": len(list(m.parameters()))}))
        """, make, placement=placement)
    params, clean = out["params"], out["clean"]
    # steps 2 to 4: known clean, none of them read
    assert clean["overflow_bounded"] >= bounded_per_step * 3 * params
    assert clean["overflow_checks"] > clean["overflow_bounded"]  # the model's own ops are read
    # the planted fault: the first parameter update of step 5 (SGD's add_ was bounded until then)
    assert out["overflows"], "the planted overflow was missed"
    assert [e["op_type"] for e in out["overflows"]] == [update] * params
    root = out["root_cause"]
    assert root["op_type"] == update and root["inputs_finite"] is True
    assert root["tensors"][-1]["io"] == "output" and root["tensors"][-1]["beyond_fp16"] > 0


# With foreach=True (the default on CUDA in PyTorch 2.x) each update is one op over every parameter
# whose schema returns nothing (_foreach_add_(Tensor(a!)[] self, ...) -> ()): it is checked on the
# tensors it writes, and its zero_grad()'s _foreach_zero_ is no overflow.
FOREACH = {"sgd": ("torch.optim.SGD(m.parameters(), lr=0.01, momentum=0.9, foreach=True)", "_foreach_add_"),
           "adam": ("torch.optim.Adam(m.parameters(), lr=0.01, foreach=True)", "_foreach_addcdiv_")}


@pytest.mark.parametrize("optimizer", FOREACH)
def test_an_optimizer_update_over_every_parameter_at_once_is_checked(tmp_path, optimizer):
    make, update = FOREACH[optimizer]
    out = run(tmp_path, TRAINING + """
        with opdump.dumper(check_overflow=True, check_fp16_range=True, dump_path=OUT) as d:
            for _ in range(3):
                step()
            clean = list(d.overflows)
            opt.param_groups[0]["lr"] = 1e12  # every update leaves float16's range, finite in float32
            step()
        print(json.dumps({"clean": clean, "overflows": d.overflows, "root_cause": d.root_cause,
                          "params": len(list(m.parameters()))}))
        """, make)
    assert out["clean"] == []
    assert [e["op_type"] for e in out["overflows"]] == [update], "the planted overflow was missed"
    root = out["root_cause"]
    assert root["op_type"] == update and root["inputs_finite"] is True
    written = [t for t in root["tensors"] if t["io"] == "output"]
    assert len(written) == out["params"]  # what it wrote: every parameter
    assert all(t["beyond_fp16"] > 0 for t in written)


@pytest.mark.parametrize("elements", [1000, 400_000])  # copied before the op writes it; checked before instead
@pytest.mark.parametrize("dtype", ["float32", "float16"])
def test_bounds_at_the_edge_of_float16(tmp_path, elements, dtype):
    out = run(tmp_path, """
        n, dtype = int(sys.argv[2]), getattr(torch, sys.argv[3])
        with opdump.dumper(check_overflow=True, check_fp16_range=True, dump_path=OUT) as d:
            x = torch.full((n,), 60000.0, dtype=dtype)  # read: its largest |x| is 60000
            x.mul_(1.0917)  # 65502: float32 holds it within float16's range; float16 rounds it to 65504
            x.mul_(1.0001)  # 65508.55: beyond float16's range
        print(json.dumps({"overflows": [e["op_name"] for e in d.overflows], "report": d.report}))
        """, elements, dtype)
    names = [n.rsplit("/", 1)[-1] for n in out["overflows"]]
    if dtype == "float32":
        assert names == ["mul_-op1"]
        assert out["report"]["overflow_bounded"] == 1  # the first mul_, from 60000 * 1.0917
    else:  # float16 saturates at 65504: the first mul_ overflows already, and the bound said so
        assert names == ["mul_-op0", "mul_-op1"]
        assert out["report"]["overflow_bounded"] == 0


@pytest.mark.parametrize("how", ["data", "data_element", "numpy"])
def test_writes_the_version_counter_misses_are_seen(tmp_path, how):
    out = run(tmp_path, """
        how = sys.argv[2]
        p = torch.zeros(400_000)
        with opdump.dumper(check_overflow=True, check_fp16_range=True, dump_path=OUT) as d:
            p.add_(1.0)  # known clean: |p| <= 1
            big = np.full(p.shape, 70000.0, dtype=np.float32)
            if how == "data":
                p.data.copy_(torch.from_numpy(big))  # an alias with its own version counter; copy_ is not checked
            elif how == "data_element":
                p.data[5] = 70000.0  # the same, one element (no fingerprint sample sees it)
            else:
                p.numpy()[:] = big  # no op at all
            p.add_(1.0)  # 70001: beyond float16, whatever p's old bound said
        print(json.dumps({"overflows": [e["op_name"] for e in d.overflows], "report": d.report}))
        """, how)
    assert [n.rsplit("/", 1)[-1] for n in out["overflows"]] == ["add_-op1"]
    assert out["report"]["overflow_bounded"] == 1


def test_an_in_place_op_known_clean_before_it_runs_is_not_copied(tmp_path):
    out = run(tmp_path, """
        p = torch.ones(100_000)  # 400 KB: small enough to be copied before an op writes it
        with opdump.dumper(check_overflow=True, check_fp16_range=True, dump_path=OUT) as d:
            p.zero_()     # known to hold zeros (not an op that is checked: it computes nothing)
            p.add_(1.0)   # |p| <= 1, known before add_ runs: it cannot overflow, nothing to keep for its dump
            p.mul_(0.5)
            known = opdump.counters()
            p.exp_()      # no bound rule: p is copied before exp_ overwrites it
            unknown = opdump.counters()
            p.mul_(70000.0)  # beyond float16's range: copied, read, and dumped as it was before
        print(json.dumps({"known": known, "unknown": unknown, "overflows": d.overflows}))
        """)
    assert out["known"]["overflow_bounded"] == 2 and out["known"]["overflow_bytes_copied"] == 0
    assert out["unknown"]["overflow_bytes_copied"] == 400_000
    assert [e["op_type"] for e in out["overflows"]] == ["mul_"]


@pytest.mark.parametrize("placement", ["auto", "background"])
def test_an_accumulation_checks_its_operand_instead_of_copying_what_it_overwrites(tmp_path, placement):
    # backward's gradient reaches AccumulateGrad moments after the op that made it: on the background thread
    # its check is still queued behind a large one (as each op ends, it is done already). The add_ into the zeroed gradient checks that operand itself (a read in
    # cache) and is then known clean before it runs: nothing copied. One whose operand leaves float16's
    # range is still copied, read and reported, with its input as it was.
    out = run(tmp_path, """
        g = torch.ones(100_000)  # 400 KB: an in-place write copies it first unless known clean
        big, x = torch.rand(4_000_000), torch.rand(100_000)
        with opdump.dumper(check_overflow=True, check_fp16_range=True, dump_path=OUT) as d:
            g.zero_()
            late = big * 2.0   # 16 MB to check on the background thread, ahead of the next one
            incoming = x * 3.0
            g.add_(incoming)   # |g| <= 0 + 3: clean, once incoming's check is done
            clean = opdump.counters()
            late = big * 2.0
            incoming = x * 70000.0
            g.add_(incoming)   # beyond float16's range
            fired = opdump.counters()
        print(json.dumps({"clean": clean, "fired": fired, "overflows": d.overflows, "root": d.root_cause}))
        """, placement=placement)
    assert out["clean"]["overflow_bytes_copied"] == 0
    assert out["clean"]["overflow_bounded"] >= 1  # the add_, from its operands' bounds
    assert out["fired"]["overflow_bytes_copied"] == 400_000
    assert [e["op_type"] for e in out["overflows"]] == ["mul", "add_"]
    root = out["root"]
    assert root["op_type"] == "mul"
    add = out["overflows"][1]
    assert add["tensors"][0]["io"] == "input" and add["tensors"][0]["beyond_fp16"] == 0  # g as add_ read it


# A small convolutional net trained with momentum SGD (run() dedents the body it is part of).
CONV_NET = """
        torch.manual_seed(0)
        m = torch.nn.Sequential(torch.nn.Conv2d(3, 16, 3, padding=1), torch.nn.ReLU(),
                                torch.nn.Conv2d(16, 32, 3, stride=2, padding=1, bias=False), torch.nn.ReLU(),
                                torch.nn.Flatten(), torch.nn.Linear(32 * 8 * 8, 10))
        opt = torch.optim.SGD(m.parameters(), lr=0.01, momentum=0.9)
        x, y = torch.randn(4, 3, 16, 16), torch.randint(0, 10, (4,))
        def step(scale=1.0):
            opt.zero_grad(set_to_none=False)
            # (the product is checked: the first convolution's input gets a bound)
            (scale * torch.nn.functional.cross_entropy(m(x * 1.0), y)).backward()
            opt.step()
"""


@pytest.mark.parametrize("placement", ["auto", "background"])
def test_convolutions_and_matrix_products_are_known_clean_and_a_planted_fault_is_still_found(tmp_path, placement):
    # Each element of a convolution's output or gradient, or of a matrix product, sums K products of
    # operands whose bounds are known: K * Ma * Mb + bias bounds it, so a trained net's convolutions,
    # their gradients (the weights' are most of what overflow mode read) and its linear layer are not
    # read. A loss scaled far beyond float16's range makes those gradients overflow: their bounds say so,
    # they are read, and each is reported.
    out = run(tmp_path, CONV_NET + """
        sizes = sum(p.numel() * 4 for p in m.parameters())
        step()
        with opdump.dumper(check_overflow=True, check_fp16_range=True, dump_path=OUT) as d:
            step()  # parameters and activations get their checks
            opdump.step()  # (an iteration's checks are all counted when it ends)
            before = opdump.counters()
            step()
            opdump.step()
            after = opdump.counters()
            clean = list(d.overflows)
            step(scale=1e9)
        read = after["overflow_bytes_read"] - before["overflow_bytes_read"]
        print(json.dumps({"read": read, "sizes": sizes, "clean": clean, "overflows": d.overflows,
                          "bounded": after["overflow_bounded"] - before["overflow_bounded"],
                          "checks": after["overflow_checks"] - before["overflow_checks"]}))
        """, placement=placement)
    assert out["clean"] == []
    # weight gradients alone are `sizes` bytes: none of them is read, only the data times 1 and the
    # loss's ops, which have no rule. The same on the background thread: a check the write barrier forces
    # ahead of its turn has the older checks done first when an operand's bound is not known yet, so
    # what is read does not depend on how far that thread got (it did, and read 2x `sizes` under torch 2.6).
    assert out["read"] < out["sizes"] / 4, out
    assert out["bounded"] >= out["checks"] - 8, out
    fired = [e["op_type"] for e in out["overflows"]]
    assert "convolution_backward" in fired and "mm" in fired, fired
    conv = next(e for e in out["overflows"] if e["op_type"] == "convolution_backward")
    assert any(t["io"] == "output" and t["beyond_fp16"] > 0 for t in conv["tensors"])


# Float32 elements of a tensor no rule bounds (an exp's): its check holds the background thread for
# tens of milliseconds, while a step of CONV_NET queues its checks behind it.
LAGGING = 50_000_000


def test_checks_forced_ahead_of_a_lagging_background_thread_read_no_more_than_checks_as_each_op_ends(tmp_path):
    # The optimizer's in-place updates force the checks of their operands' producers ahead of the held
    # background thread; those find their own operands' checks still queued behind the large one. They
    # have the older checks done first, so the dump reads no more, and knows no fewer clean, than
    # checking as each op ends does (bar the large tensors' two reads per step), however far that thread
    # got. And each iteration's checks are all done and counted when it ends.
    body = CONV_NET + """
        big = torch.rand(int(sys.argv[2]))
        step()
        counts = []
        with opdump.dumper(check_overflow=True, check_fp16_range=True, dump_path=OUT) as d:
            for _ in range(3):
                if big.numel():
                    big.exp()
                step()
                if big.numel():
                    big.exp()  # still queued as the iteration ends
                opdump.step()
                counts.append(opdump.counters())
        print(json.dumps(counts))
        """
    (tmp_path / "inline").mkdir()
    (tmp_path / "behind").mkdir()
    inline = run(tmp_path / "inline", body, 0, placement="auto")
    behind = run(tmp_path / "behind", body, LAGGING, placement="background")
    # (Checked later, an op may find an operand's bound that a later op's check made known: never fewer.)
    for steps, (a, b) in enumerate(zip(inline, behind), start=1):
        assert b["overflow_checks"] == a["overflow_checks"] + 2 * steps, (steps, a, b)
        assert b["overflow_bounded"] >= a["overflow_bounded"], (steps, a, b)
        assert b["overflow_bytes_read"] <= a["overflow_bytes_read"] + 2 * steps * LAGGING * 4, (steps, a, b)


def test_a_convolution_whose_input_leaves_the_bound_is_read_and_reported(tmp_path):
    out = run(tmp_path, CONV_NET + """
        step()
        with opdump.dumper(check_overflow=True, check_fp16_range=True, dump_path=OUT) as d:
            step()
            with torch.no_grad():
                m[0].weight[0, 0, 0, 0] = 6e4  # within float16's range, but the outputs it meets data of 1.1 and more in leave it
            m(x)
        print(json.dumps({"overflows": d.overflows, "root": d.root_cause}))
        """)
    assert out["root"]["op_type"] == "conv2d", out["overflows"]
    assert out["root"]["inputs_finite"] is True
