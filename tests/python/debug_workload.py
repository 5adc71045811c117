"""Models with planted faults for the debug-scene tests, run in their own process.

    debug_workload.py overflow  --config CFG [--context DUMP_PATH] --result OUT.json
    debug_workload.py exception --config CFG --result OUT.json
    debug_workload.py watcher   --config CFG --result OUT.json
    debug_workload.py sample    --config CFG --result OUT.json
    debug_workload.py singleop  --config CFG --result OUT.json

Each writes what the test needs to check against the dump to OUT.json."""
import argparse
import json

import torch
import torch.nn as nn

import opdump


class PlantedOverflow(nn.Module):
    """exp of large values overflows to Inf; every later op inherits it. With fp16_plant, a
    square before it already leaves float16's range (finite in float32)."""

    def __init__(self, fp16_plant=False):
        super().__init__()
        self.fc = nn.Linear(8, 8)
        self.head = nn.Linear(8, 2)
        self.fp16_plant = fp16_plant

    def forward(self, x):
        h = torch.tanh(self.fc(x))            # finite, bounded
        if self.fp16_plant:
            h = h * 1000.0                    # within float16
            e = torch.exp((h * h) * 2e-4)     # h * h reaches 1e6: beyond float16
        else:
            e = torch.exp(h * 200.0)          # the planted overflow: exp(200) > float32 max
        self.last_exp = e
        return self.head(e - e.mean())        # inherits Inf/NaN


class PlantedException(nn.Module):
    """mm with mismatched shapes raises inside the model."""

    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(8, 8)
        self.w = nn.Parameter(torch.randn(5, 3))

    def forward(self, x):
        return torch.mm(torch.relu(self.fc(x)), self.w)


class PlantedOverwrite(nn.Module):
    """Writes into fc's output through a view after other ops used it."""

    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(8, 8)

    def forward(self, x):
        y = self.fc(x)
        a = torch.relu(y + 1.0)
        y.view(-1)[:5].mul_(0.5)  # the planted overwrite
        return a.sum() + torch.sigmoid(a).sum()


def main():
    p = argparse.ArgumentParser()
    p.add_argument("scene")
    p.add_argument("--config")
    p.add_argument("--context", help="use `with opdump.dumper(check_overflow=True, dump_path=...)`")
    p.add_argument("--register", action="store_true", help="register the model before the context")
    p.add_argument("--result", required=True)
    p.add_argument("--device", default="cpu")
    p.add_argument("--fp16-plant", action="store_true", help="square values so that a mul leaves float16's range first")
    p.add_argument("--clamp-after", action="store_true",
                   help="after backward, clamp exp's output in place: its dump must still show what exp wrote")
    args = p.parse_args()
    torch.manual_seed(0)
    torch.set_num_threads(1)
    out = {}
    x = torch.randn(4, 8)

    if args.scene == "overflow":
        model = PlantedOverflow(args.fp16_plant).to(args.device)
        x = x.to(args.device)
        if args.context:
            if args.register:
                model = opdump.register_model(model, "net").module
            with opdump.dumper(check_overflow=True, dump_path=args.context) as d:
                model(x).sum().backward()
            out.update(root_cause=d.root_cause, overflows=d.overflows, root=d.root)
        else:
            opdump.set_dump(args.config)
            model = opdump.register_model(model, "net").module
            model(x).sum().backward()
            if args.clamp_after:
                with torch.no_grad():
                    model.last_exp.clamp_(max=1.0)
            out["root"] = opdump.dump_root()
            out["report"] = opdump.finalize_dump()

    elif args.scene == "exception":
        model = PlantedException()
        expected = None
        try:  # the same failure without opdump, for the unchanged-exception check
            model(x)
        except Exception as e:  # noqa: BLE001 - the test compares whatever it is
            expected = (type(e).__name__, str(e))
        opdump.set_dump(args.config)
        model = opdump.register_model(model, "net").module
        try:
            model(x)
            got = None
        except Exception as e:  # noqa: BLE001
            got = (type(e).__name__, str(e))
        out.update(expected=expected, got=got, root=opdump.dump_root(), report=opdump.finalize_dump())

    elif args.scene == "watcher":
        opdump.set_dump(args.config)
        model = opdump.register_model(PlantedOverwrite(), "net").module
        with torch.no_grad():
            model(x)
        out.update(root=opdump.dump_root(), report=opdump.finalize_dump())

    elif args.scene == "sample":
        opdump.set_dump(args.config)
        model = opdump.register_model(nn.Linear(8, 64), "net").module
        with torch.no_grad():
            y = model(x)
        out.update(output=y.flatten().tolist(), root=opdump.dump_root(), report=opdump.finalize_dump())

    elif args.scene == "singleop":
        opdump.set_dump(args.config)
        a = torch.randn(3, 3)
        torch.matmul(a, a)  # outside any model: the CANN offline-model dump guide's single-operator layout
        model = opdump.register_model(nn.Linear(3, 2), "net").module
        with torch.no_grad():
            model(a)
        out.update(root=opdump.dump_root(), report=opdump.finalize_dump())

    with open(args.result, "w") as f:
        json.dump(out, f)


if __name__ == "__main__":
    main()
