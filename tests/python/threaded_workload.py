"""Three Python threads train one registered model at once while opdump dumps tensors and
statistics: autograd runs on each thread, the writer threads run beside them. Run under TSan by
scripts/sanitize.sh (DataLoader workers are not: TSan's runtime fails in forked children).

    PYTHONPATH=build/python /usr/bin/python3 tests/python/threaded_workload.py DUMP_DIR"""
import json
import os
import sys
import threading

import torch

import opdump


def main(dump_dir):
    cfg_path = os.path.join(dump_dir, "config.json")
    os.makedirs(dump_dir, exist_ok=True)
    json.dump({"common_dump_settings": {"dump_mode": 0, "path": os.path.abspath(dump_dir), "net_name": "net",
                                        "iteration": "all", "saved_data": "full", "input_output": 0, "kernels": [],
                                        "support_device": [0]},
               "e2e_dump_settings": {"enable": True}}, open(cfg_path, "w"))
    opdump.set_dump(cfg_path)
    model = opdump.register_model(torch.nn.Sequential(torch.nn.Linear(32, 32), torch.nn.ReLU(),
                                                      torch.nn.Linear(32, 4)), "net")

    def work():
        for _ in range(5):
            model(torch.randn(8, 32)).sum().backward()

    for _ in range(2):
        threads = [threading.Thread(target=work) for _ in range(3)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        opdump.step()
    report = opdump.finalize_dump()
    assert report["ok"] and report["files_written"] > 0, report
    print("threaded workload OK:", report["files_written"], "files")


if __name__ == "__main__":
    main(sys.argv[1])
