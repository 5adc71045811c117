"""Three Python threads train one registered model at once while opdump dumps: autograd runs on
each thread, the writer threads and the statistics thread run beside them. MODE full: tensors
and statistics of every iteration; statistic: statistics only, with an undumped iteration
between dumped ones (lazy statistics, writes forcing them, draining); overflow: the overflow
check (checks on the background thread, overflows planted on every thread, dumped from there).
Run under TSan by scripts/sanitize.sh (DataLoader workers are not: TSan's runtime fails in forked
children).

    PYTHONPATH=build/python /usr/bin/python3 tests/python/threaded_workload.py DUMP_DIR full|statistic|overflow"""
import json
import os
import sys
import threading

import torch

import opdump


def run(dump_dir, mode, iteration):
    cfg_path = os.path.join(dump_dir, "config.json")
    os.makedirs(dump_dir, exist_ok=True)
    overflow = mode == "overflow"
    json.dump({"common_dump_settings": {"dump_mode": 0, "path": os.path.abspath(dump_dir), "net_name": "net",
                                        "iteration": iteration, "saved_data": "tensor" if overflow else mode,
                                        "input_output": 0, "kernels": [], "support_device": [0],
                                        "op_debug_mode": 3 if overflow else 0},
               "e2e_dump_settings": {"enable": True}}, open(cfg_path, "w"))
    opdump.set_dump(cfg_path)
    model = opdump.register_model(torch.nn.Sequential(torch.nn.Linear(32, 32), torch.nn.ReLU(inplace=True),
                                                      torch.nn.Linear(32, 4)), "net").module
    opt = torch.optim.SGD(model.parameters(), lr=0.01)

    def work():
        for _ in range(5):
            out = model(torch.randn(8, 32))
            if overflow:
                # overflows: +Inf, whatever the random weights and inputs (out.mul(1e30) alone stays finite
                # under exp in the rare step whose outputs are all <= 0)
                out = out.abs().add(1).mul(1e30).exp()
            out.sum().backward()

    for _ in range(4):
        threads = [threading.Thread(target=work) for _ in range(3)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        opt.step()
        opt.zero_grad()
        opdump.step()
    report = opdump.finalize_dump()
    assert report["ok"] and (report["statistic_rows"] > 0 or overflow), report
    if overflow:
        with open(os.path.join(dump_dir, "rank_0", "overflow_summary.json")) as f:
            summary = json.load(f)
        # 3 iterations of 3 threads x 5 steps each planted exp overflows, and the root cause is one of them
        assert summary["root_cause"]["op_type"] == "exp" and summary["root_cause"]["inputs_finite"], summary["root_cause"]
        exps = [(op["iteration"], op["op_name"], op["task_id"]) for op in summary["ops"] if op["op_type"] == "exp"]
        assert len(exps) == 45, sorted(exps)
    return report


def main(dump_dir, mode):
    report = run(dump_dir, mode, "all" if mode == "full" else "0|2|3")
    assert mode == "statistic" or report["files_written"] > 0, report
    print("threaded workload OK:", report["files_written"], "files,", report["statistic_rows"], "statistic rows")


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
