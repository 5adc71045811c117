"""The workload the benches that time a dumped training step share: the one of the msprobe overhead figure (shared
reference peers.md: resnet18 4x3x64x64, 1000 classes, SGD momentum 0.9, every iteration dumped), and the
MindSpore-style dump config they dump it with. bench_torch.py also trains resnet50 at 4x the batch (about 10x the
work: does the overhead grow with the model?) and "tiny", 100 Linear(16, 16)+ReLU layers (what each op costs,
whatever its size)."""

MODELS = ("resnet18", "resnet50", "tiny")


def build(model="resnet18", device="cpu"):
    """(module, optimizer, step): the model on `device`, seeded, and one training step (synchronized on a GPU:
    a step's time is its kernels' too)."""
    import torch
    import torchvision
    torch.manual_seed(0)
    if model == "tiny":
        m = torch.nn.Sequential(*[l for _ in range(100) for l in (torch.nn.Linear(16, 16), torch.nn.ReLU())],
                                torch.nn.Linear(16, 1000))
        x = torch.randn(4, 16)
    else:
        m = getattr(torchvision.models, model)(num_classes=1000)
        x = torch.randn(16 if model == "resnet50" else 4, 3, 64, 64)
    m, x = m.to(device), x.to(device)
    opt = torch.optim.SGD(m.parameters(), lr=0.01, momentum=0.9)
    y = torch.randint(0, 1000, (x.shape[0],)).to(device)
    on_gpu = device != "cpu"

    def step():
        opt.zero_grad()
        torch.nn.functional.cross_entropy(m(x), y).backward()
        opt.step()
        if on_gpu:
            torch.cuda.synchronize()

    return m, opt, step


def dump_config(path, iteration="all", saved_data="statistic", op_debug_mode=0, host_work=None):
    """The dump of every op's inputs and outputs at api level into `path` (op_debug_mode 3: the overflow check;
    host_work: opdump's placement of host statistics and checks, when forced)."""
    cfg = {"common_dump_settings": {"dump_mode": 0, "path": path, "net_name": "resnet", "iteration": iteration,
                                    "saved_data": saved_data, "input_output": 0, "kernels": [],
                                    "support_device": [0], "op_debug_mode": op_debug_mode},
           "e2e_dump_settings": {"enable": True}}
    if host_work:
        cfg["opdump"] = {"host_work": host_work}
    return cfg
