"""A deterministic CPU training workload run in its own process by the adapter tests.

    torch_workload.py --model resnet18|small|inplace --steps N [--config FILE] [--result OUT.json] [--device cuda]

Writes the losses, a hash of the final parameters and what opdump reported to OUT.json."""
import argparse
import hashlib
import json
import os
import sys

import torch
import torch.nn as nn
import torch.nn.functional as F


class Small(nn.Module):
    """Conv -> BN -> ReLU -> pool -> Linear: every kind of op a training step has, quickly.

    OPDUMP_TEST_PLANT_BUG=1 gives bn1 a different eps (a slightly wrong batch_norm);
    OPDUMP_TEST_RENAME=1 calls conv1 "stem" (same computation, other names);
    OPDUMP_TEST_EXTRA_OPS=1 runs unrelated ops before each step (same numbers, more ops)."""

    def __init__(self):
        super().__init__()
        conv = nn.Conv2d(3, 8, 3, padding=1)
        if os.environ.get("OPDUMP_TEST_RENAME"):
            self.stem = conv
        else:
            self.conv1 = conv
        self.bn1 = nn.BatchNorm2d(8, eps=1e-2 if os.environ.get("OPDUMP_TEST_PLANT_BUG") else 1e-5)
        self.relu = nn.ReLU(inplace=True)
        self.pool = nn.MaxPool2d(2)
        self.fc = nn.Linear(8 * 8 * 8, 10)

    def forward(self, x):
        conv = self.stem if hasattr(self, "stem") else self.conv1
        x = self.pool(self.relu(self.bn1(conv(x))))
        return self.fc(torch.flatten(x, 1))


class InPlace(nn.Module):
    """x.mul_(2) mutates its input: the dump must hold the value before the mutation."""

    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(16, 16)

    def forward(self, x):
        y = self.fc(x)
        y.mul_(2.0)
        return y.sum(dim=1, keepdim=True).expand(-1, 10)


def build(name):
    if name == "resnet18":
        import torchvision
        return torchvision.models.resnet18(num_classes=10), (4, 3, 64, 64)
    if name == "small":
        return Small(), (4, 3, 16, 16)
    if name == "inplace":
        return InPlace(), (4, 16)
    raise SystemExit(f"unknown model {name}")


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--model", default="small")
    p.add_argument("--steps", type=int, default=3)
    p.add_argument("--config")
    p.add_argument("--result")
    p.add_argument("--register-before", action="store_true", help="register the model before set_dump")
    p.add_argument("--mark", action="store_true", help="set_dump(model.fc) for dump_mode 2")
    p.add_argument("--distributed", action="store_true")
    p.add_argument("--bf16", action="store_true", help="forward under CPU autocast to bfloat16")
    p.add_argument("--threads", type=int, default=1, help="torch.set_num_threads")
    p.add_argument("--device", default="cpu", help="where the model trains (cuda: deterministic cuBLAS too)")
    args = p.parse_args()
    if args.device != "cpu":
        os.environ.setdefault("CUBLAS_WORKSPACE_CONFIG", ":4096:8")  # read when cuBLAS starts: deterministic GEMMs

    torch.manual_seed(0)
    torch.use_deterministic_algorithms(True)
    torch.set_num_threads(args.threads)
    if args.distributed:
        import torch.distributed as dist
        dist.init_process_group("gloo")
    model, shape = build(args.model)
    model.to(args.device)
    opt = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
    gen = torch.Generator().manual_seed(1)
    data = [(torch.randn(shape, generator=gen), torch.randint(0, 10, (shape[0],), generator=gen))
            for _ in range(args.steps)]

    report = None
    if args.config:
        sys.path.insert(0, os.environ.get("OPDUMP_PYTHONPATH", ""))
        import opdump
        if args.register_before:
            opdump.register_model(model, "net")
        opdump.set_dump(args.config)
        if not args.register_before:
            opdump.register_model(model, "net")
        if args.mark:
            opdump.set_dump(model.fc, enabled=True)
        opdump.hook_optimizer(opt)

    losses = []
    for x, y in data:
        if os.environ.get("OPDUMP_TEST_EXTRA_OPS"):
            torch.ones(4).mul(3).add(1).sum()  # bookkeeping outside the model
        x, y = x.to(args.device), y.to(args.device)
        opt.zero_grad()
        with torch.autocast(torch.device(args.device).type, dtype=torch.bfloat16, enabled=args.bf16):
            out = model(x)
        loss = F.cross_entropy(out.float(), y)
        loss.backward()
        opt.step()
        losses.append(loss.item())
        if args.distributed:
            import torch.distributed as dist
            t = torch.tensor([loss.item()])
            dist.all_reduce(t)

    names = [open(f"/proc/self/task/{t}/comm").read().strip() for t in os.listdir("/proc/self/task")]
    thread_names = sorted(set(names))
    thread_counts = {n: names.count(n) for n in thread_names}
    if args.config:
        import opdump
        root = opdump.dump_root()
        report = opdump.finalize_dump()
        report["root"] = root
    digest = hashlib.sha256(b"".join(p.detach().cpu().numpy().tobytes() for p in model.parameters())).hexdigest()
    result = {"losses": losses, "params": digest, "report": report, "thread_names": thread_names,
              "thread_counts": thread_counts}
    if args.result:
        with open(args.result, "w") as f:
            json.dump(result, f)
    else:
        print(json.dumps(result))


if __name__ == "__main__":
    main()
