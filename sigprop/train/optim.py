"""Optimizers over stacked parameters with one learning rate per model.

They follow ``torch.optim.SGD`` and ``torch.optim.RMSprop`` update rules exactly
(defaults: no dampening; RMSProp α = 0.99, ε = 1e-8; weight decay added to
the gradient as ``weight_decay`` does there), so a shard can be checked
against models trained one by one with the stock optimizers.  ``lr`` is a
``[M]`` tensor; a model whose ``lr`` is 0 is frozen (used for diverged models).
"""

from __future__ import annotations

import torch

OPTIMIZERS = ("sgd", "rmsprop")


class StackedOptimizer:
    def __init__(
        self,
        params: list[torch.Tensor],
        kind: str,
        momentum: torch.Tensor,
        nesterov: bool = False,
        alpha: float = 0.99,
        eps: float = 1e-8,
        weight_decay: torch.Tensor | None = None,
    ):
        if kind not in OPTIMIZERS:
            raise ValueError(f"unknown optimizer '{kind}'; known: {list(OPTIMIZERS)}")
        self.params, self.kind = params, kind
        self.momentum, self.nesterov = momentum, nesterov
        self.alpha, self.eps = alpha, eps
        self.weight_decay = weight_decay
        self.state: list[torch.Tensor | None] = [None] * len(params)
        # fixed for the optimizer's life: decided once, not at every step
        self._decay = weight_decay is not None and bool((weight_decay != 0).any())
        self._momentum = bool((momentum != 0).any())

    def _view(self, t: torch.Tensor, p: torch.Tensor) -> torch.Tensor:
        return t.view((-1,) + (1,) * (p.dim() - 1)).to(p.dtype)

    @torch.no_grad()
    def step(
        self,
        lr: torch.Tensor,
        update: torch.Tensor | None = None,
        grads: list[torch.Tensor | None] | None = None,
        lr_scalar: float | None = None,
    ) -> None:
        """One step for every model, or only for the models where ``update`` ([M] bool) is
        true: the others keep their parameters and optimizer state exactly (gradient
        accumulation of a micro-batched shard, :class:`sigprop.train.engine.ShardTrainer`).
        ``grads`` (aligned with the parameters; default: their ``.grad``) are the gradients;
        ``lr_scalar``, when every model's rate is that one number, lets plain SGD update all
        parameters in one foreach call with that number (as ``torch.optim.SGD`` does)."""
        if grads is None:
            grads = [p.grad for p in self.params]
        if update is None or bool(update.all()):
            self._step(lr, grads, lr_scalar)
            return
        # a zero rate leaves a parameter exactly as it was (its gradient is finite: diverged
        # models' gradients are zeroed by the trainer); only the optimizer state must be restored
        old_s = [None if s is None else s.clone() for s in self.state]
        self._step(lr * update.to(lr.dtype), grads, None)
        for i, p in enumerate(self.params):
            if self.state[i] is not None:
                keep = ~update.view((-1,) + (1,) * (p.dim() - 1))
                prev = old_s[i] if old_s[i] is not None else torch.zeros_like(self.state[i])
                self.state[i] = torch.where(keep, prev, self.state[i])

    def _step(self, lr: torch.Tensor, grads: list, lr_scalar: float | None = None) -> None:
        if self.kind == "sgd" and not self._momentum and not self._decay:
            # plain SGD, the common case: torch.optim.SGD's update p.add_(g, alpha=-lr), which
            # fuses the multiply-add (one rounding), for all parameters in one foreach call; with
            # a rate per model, addcmul_(g, lr, value=-1) rounds the same way (checked bit for
            # bit in tests/test_optim.py)
            ps = [p for p, g in zip(self.params, grads) if g is not None]
            gs = [g for g in grads if g is not None]
            if not ps:
                return
            if lr_scalar is not None:
                torch._foreach_add_(ps, gs, alpha=-lr_scalar)
            else:
                torch._foreach_addcmul_(ps, gs, [self._view(lr, p) for p in ps], value=-1)
            return
        for i, p in enumerate(self.params):
            g = grads[i]
            if g is None:
                continue
            lr_ = self._view(lr, p)
            if self._decay:
                g = g + self._view(self.weight_decay, p) * p
            if self.kind == "sgd":
                mom = self._view(self.momentum, p)
                if self._momentum:
                    buf = self.state[i]
                    buf = g.clone() if buf is None else buf.mul_(mom).add_(g)
                    self.state[i] = buf
                    d = g + mom * buf if self.nesterov else buf
                    # models without momentum use the plain gradient
                    g = torch.where(mom != 0, d, g)
                p.sub_(lr_ * g)
            else:
                sq = self.state[i]
                if sq is None:
                    sq = torch.zeros_like(p)
                sq.mul_(self.alpha).addcmul_(g, g, value=1 - self.alpha)
                self.state[i] = sq
                p.sub_(lr_ * g / (sq.sqrt() + self.eps))

    def state_dict(self) -> dict:
        return {"kind": self.kind, "state": [s for s in self.state]}

    def load_state_dict(self, d: dict) -> None:
        if d["kind"] != self.kind:
            raise ValueError(f"optimizer state is for '{d['kind']}', not '{self.kind}'")
        self.state = list(d["state"])
