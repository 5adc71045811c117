"""Python training with a MindSpore-style dump config: statistics of the conv ops and of fc3.

    PYTHONPATH=build/python /usr/bin/python3 examples/train_mindspore.py [CONFIG] [DUMP_PATH]
"""
import json
import os
import sys
import tempfile

import torch
import torch.nn as nn
import torch.nn.functional as F

import opdump


class LeNet(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(1, 6, 5)
        self.conv2 = nn.Conv2d(6, 16, 5)
        self.fc1 = nn.Linear(16 * 4 * 4, 120)
        self.fc2 = nn.Linear(120, 84)
        self.fc3 = nn.Linear(84, 10)

    def forward(self, x):
        x = F.max_pool2d(F.relu(self.conv1(x)), 2)
        x = F.max_pool2d(F.relu(self.conv2(x)), 2)
        x = torch.flatten(x, 1)
        return self.fc3(F.relu(self.fc2(F.relu(self.fc1(x)))))


def main():
    config = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), "mindspore_dump.json")
    if len(sys.argv) > 2:  # write the config with another dump path (MindSpore requires an absolute one)
        cfg = json.load(open(config))
        cfg["common_dump_settings"]["path"] = os.path.abspath(sys.argv[2])
        config = os.path.join(tempfile.mkdtemp(), "dump.json")
        json.dump(cfg, open(config, "w"))
    torch.manual_seed(0)
    model = LeNet()
    opt = torch.optim.SGD(model.parameters(), lr=0.05)
    opdump.set_dump(config)
    opdump.register_model(model, "LeNet")
    opdump.hook_optimizer(opt)  # each optimizer.step() ends an iteration
    for it in range(4):
        x, y = torch.randn(16, 1, 28, 28), torch.randint(0, 10, (16,))
        opt.zero_grad()
        loss = F.cross_entropy(model(x), y)
        loss.backward()
        opt.step()
        print(f"iteration {it}: loss {loss.item():.4f}")
    report = opdump.finalize_dump()
    print(f"dumped {report['ops']} ops, {report['statistic_rows']} statistic rows into {opdump.dump_root() or 'the dump path'}")


if __name__ == "__main__":
    main()
