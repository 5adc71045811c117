"""Gradients of several tensors gathered for one backward record (msprobe's module records)."""


def on_gradients(tensors, done):
    """Calls done(grads) once, when the gradients of all of `tensors` that need one reached them in backward
    (grads in the order of those tensors). Returns whether any tensor needs a gradient."""
    import torch
    wanting = [t for t in tensors if isinstance(t, torch.Tensor) and t.requires_grad and torch.is_grad_enabled()]
    if not wanting:
        return False
    grads = [None] * len(wanting)
    left = [len(wanting)]

    def hook_for(i):
        def hook(grad):
            grads[i] = grad
            left[0] -= 1
            if left[0] == 0:
                done(grads)
            return None  # the gradient is not changed
        return hook
    for i, t in enumerate(wanting):
        t.register_hook(hook_for(i))
    return True
