"""A training script written for msprobe (the msprobe PyTorch data-dump guide's template), with only its
import changed: `from opdump import PrecisionDebugger` (msprobe's own with --msprobe). Run by
test_msprobe_front_door.py and test_msprobe_layout.py.

    msprobe_script.py RESULT.json [--config CONFIG.json] [--plain] [--plant-overflow STEP] [--model-arg]
                      [--keyword-step N] [--msprobe]

Writes each step's loss, the model's input and output (to check the dump against)."""
import argparse
import json

import torch

parser = argparse.ArgumentParser()
parser.add_argument("result")
parser.add_argument("--config")
parser.add_argument("--plain", action="store_true", help="no debugger at all (the losses to compare with)")
parser.add_argument("--plant-overflow", type=int, default=-1, help="this step's input is scaled so that the loss overflows")
parser.add_argument("--model-arg", action="store_true", help="the model goes to PrecisionDebugger(model=...)")
parser.add_argument("--keyword-step", type=int, action="append", help="PrecisionDebugger(step=[...])")
parser.add_argument("--msprobe", action="store_true", help="msprobe's own PrecisionDebugger (its source on PYTHONPATH)")
args = parser.parse_args()

if args.msprobe:
    from msprobe.pytorch import PrecisionDebugger
else:
    from opdump import PrecisionDebugger

torch.manual_seed(0)
model = torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.ReLU(), torch.nn.Linear(16, 4))
optimizer = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
debugger = None
if not args.plain:
    kwargs = {"model": model} if args.model_arg else {}
    if args.keyword_step:
        kwargs["step"] = args.keyword_step
    debugger = PrecisionDebugger(config_path=args.config, **kwargs)

losses, inputs, outputs = [], [], []
for step in range(4):
    x = torch.randn(2, 8)
    if step == args.plant_overflow:
        x = x * 1e20  # finite through both Linears; the loss's square leaves float32's range
    inputs.append(x.numpy().tolist())
    if debugger:
        debugger.start(None if args.model_arg else model)
    out = model(x)
    outputs.append(out.detach().numpy().tolist())
    loss = out.square().mean()
    loss.backward()
    optimizer.step()
    optimizer.zero_grad()
    if debugger:
        debugger.stop()
    torch.exp(torch.full((3,), 2.0))  # after stop(): never dumped
    if debugger:
        debugger.step()
    losses.append(float(loss))

json.dump({"losses": losses, "inputs": inputs, "outputs": outputs}, open(args.result, "w"))
