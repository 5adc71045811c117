"""Finds the first op that overflows in a training step, as torch.utils.dumper of the torch_npu accuracy
comparison guide does.

    PYTHONPATH=build/python /usr/bin/python3 examples/find_overflow.py [DUMP_PATH]

The model's attention-like block exponentiates unscaled scores: with inputs large enough, exp
overflows to Inf and every later op (softmax division, the loss, the gradients) inherits NaN.
opdump prints each overflowing op as it happens (`IR: <op> SeqId: <n> is overflow!`, as the guide's
tool did) and names the root cause at the end; the .h5 file it writes in DUMP_PATH holds only those
ops, with their inputs and outputs (Opdebug records beside it, in <file>.opdump/).
Afterwards `opdump overflow DUMP_PATH/<file>.h5` finds the same op offline."""
import sys

import torch
import torch.nn as nn

import opdump


class NaiveAttention(nn.Module):
    def __init__(self, dim=16):
        super().__init__()
        self.q = nn.Linear(dim, dim)
        self.k = nn.Linear(dim, dim)
        self.out = nn.Linear(dim, 4)

    def forward(self, x):
        scores = self.q(x) @ self.k(x).transpose(1, 2)  # no 1/sqrt(d) scaling: the planted bug
        weights = torch.exp(scores)                      # overflows for large scores
        weights = weights / weights.sum(dim=-1, keepdim=True)
        return self.out((weights @ x).mean(dim=1))


def main():
    dump_path = sys.argv[1] if len(sys.argv) > 1 else "overflow_dump"
    torch.manual_seed(0)
    model = NaiveAttention()
    x = torch.randn(2, 8, 16) * 30.0
    target = torch.tensor([1, 3])
    with opdump.dumper(check_overflow=True, dump_path=dump_path) as dump:
        loss = nn.functional.cross_entropy(model(x), target)
        loss.backward()
    print(f"loss: {loss.item()}")
    if dump.root_cause:
        print(f"root cause: {dump.root_cause['op_name']} ({dump.root_cause['op_type']}); "
              f"{len(dump.overflows)} overflowing ops dumped in {dump.h5_path}")
    else:
        print("no op overflowed")


if __name__ == "__main__":
    main()
