"""A real model's training step, run as the torch_npu 1.5 accuracy comparison guide runs its dumper:
    h5_workload.py OUT.json --mode plain|h5|npy [--path P]
plain: no dump; h5: `with opdump.dumper(use_dump=True, dump_path=P)`; npy: the same ops dumped as npy
(acl.json, every op's inputs and outputs) into P. Writes the losses and, for h5, the dumper's file."""
import argparse
import json

import torch
import torchvision

import opdump


def step(model, optimizer, x, target):
    optimizer.zero_grad()
    loss = torch.nn.functional.cross_entropy(model(x), target)
    loss.backward()
    optimizer.step()
    return loss


def main():
    p = argparse.ArgumentParser()
    p.add_argument("result")
    p.add_argument("--mode", choices=["plain", "h5", "npy"], required=True)
    p.add_argument("--path")
    args = p.parse_args()
    torch.manual_seed(0)
    torch.set_num_threads(1)
    model = torchvision.models.squeezenet1_1(num_classes=10)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
    x = torch.randn(2, 3, 64, 64)
    target = torch.tensor([1, 7])
    first_weight = model.features[0].weight.detach().clone()
    out = {"losses": []}
    out["losses"].append(step(model, optimizer, x, target).item())  # outside the block
    if args.mode == "h5":
        first_weight = model.features[0].weight.detach().clone()
        with opdump.dumper(use_dump=True, dump_path=args.path) as d:
            out["losses"].append(step(model, optimizer, x, target).item())
        out.update(h5_path=d.h5_path, root=d.root, report=d.report)
    elif args.mode == "npy":
        first_weight = model.features[0].weight.detach().clone()
        opdump.set_dump({"dump": {"dump_path": args.path, "dump_list": [], "dump_op_switch": "on", "dump_mode": "all"}})
        out["losses"].append(step(model, optimizer, x, target).item())
        out["report"] = opdump.finalize_dump()
    else:
        out["losses"].append(step(model, optimizer, x, target).item())
    out["losses"].append(step(model, optimizer, x, target).item())
    out["first_weight"] = first_weight.flatten()[:16].tolist()
    with open(args.result, "w") as f:
        json.dump(out, f)


if __name__ == "__main__":
    main()
