"""Plain ``nn.Module`` versions of the architecture families, one model at a time.

Written independently of the stacked implementations (:mod:`sigprop.nets.convnets`,
:mod:`sigprop.nets.residual`), they serve two purposes: the equivalence tests
train them with ``torch.optim`` and compare with a shard, and ``sigprop bench shard``
uses them as the one-model-per-trial baseline.  :func:`from_stacked` builds one
and copies model ``m`` of a shard's initial parameters and buffers into it.

Papers cited by prefix: 000 = Huang, Xu, Du, Zeng, Zhao (2019), arXiv:1912.09132; 001 = Littwin,
Wolf (2020), arXiv:2001.10460.
"""

from __future__ import annotations

import math

import torch
import torch.nn as nn

from . import activations


class RefBlock(nn.Module):
    def __init__(self, c_in, c_out, stride, act, scale):
        super().__init__()
        self.conv1 = nn.Conv2d(c_in, c_out, 3, stride, 1, bias=False)
        self.bn1 = nn.BatchNorm2d(c_out)
        self.conv2 = nn.Conv2d(c_out, c_out, 3, 1, 1, bias=False)
        self.bn2 = nn.BatchNorm2d(c_out)
        self.short = None
        if stride != 1 or c_in != c_out:
            self.short = nn.Sequential(
                nn.Conv2d(c_in, c_out, 1, stride, bias=False), nn.BatchNorm2d(c_out)
            )
        self.act, self.scale = act, scale

    def forward(self, x):
        out = self.act(self.bn1(self.conv1(x)))
        out = self.bn2(self.conv2(out)) * self.scale
        return self.act(out + (x if self.short is None else self.short(x)))


class RefResNet(nn.Module):
    def __init__(self, blocks, width, act, n_out, c_in=3, stable=False, head=(0, 0)):
        super().__init__()
        self.act = activations.get(act)
        scale = 1 / math.sqrt(sum(blocks)) if stable else 1.0
        self.conv = nn.Conv2d(c_in, width, 3, 1, 1, bias=False)
        self.bn = nn.BatchNorm2d(width)
        layers, c = [], width
        for i, nb in enumerate(blocks):
            for j in range(nb):
                layers.append(
                    RefBlock(c, width * 2**i, 2 if i > 0 and j == 0 else 1, self.act, scale)
                )
                c = width * 2**i
        self.layers = nn.Sequential(*layers)
        hd, hw = head
        self.head = nn.ModuleList()
        for _ in range(hd):
            self.head.append(nn.Linear(c, hw))
            c = hw
        self.fc = nn.Linear(c, n_out)

    def forward(self, x):
        h = self.layers(self.act(self.bn(self.conv(x)))).mean(dim=(2, 3))
        for lin in self.head:
            h = self.act(lin(h))
        return self.fc(h)


class RefVGG(nn.Module):
    def __init__(self, width, act, n_out, mult=1, c_in=3):
        super().__init__()
        layers, c = [], c_in
        for i, (nc, w) in enumerate(zip((2, 2, 3, 3, 3), (1, 2, 4, 8, 8))):
            for _ in range(nc * mult):
                layers += [
                    nn.Conv2d(c, width * w, 3, padding=1, bias=False),
                    nn.BatchNorm2d(width * w),
                    Act(act),
                ]
                c = width * w
            if i < 4:
                layers.append(nn.MaxPool2d(2))
        self.features = nn.Sequential(*layers)
        self.fc = nn.Linear(c, n_out)

    def forward(self, x):
        return self.fc(self.features(x).mean(dim=(2, 3)))


class Act(nn.Module):
    def __init__(self, name):
        super().__init__()
        self.f = activations.get(name)

    def forward(self, x):
        return self.f(x)


def ref_vcnn(width, depth, act, n_out, c_in):
    layers, c = [], c_in
    for _ in range(depth):
        layers += [nn.Conv2d(c, width, 3, padding=1), Act(act)]
        c = width
    return nn.Sequential(*layers, GAP(), nn.Linear(c, n_out))


class GAP(nn.Module):
    def forward(self, x):
        return x.mean(dim=(2, 3))


def ref_lenet(width, depth, act, n_out, c_in, hw):
    s = ((hw - 4) // 2 - 4) // 2
    layers = [
        nn.Conv2d(c_in, 20, 5),
        Act(act),
        nn.MaxPool2d(2),
        nn.Conv2d(20, 50, 5),
        Act(act),
        nn.MaxPool2d(2),
        nn.Flatten(),
    ]
    c = 50 * s * s
    for _ in range(depth):
        layers += [nn.Linear(c, width), Act(act)]
        c = width
    return nn.Sequential(*layers, nn.Linear(c, n_out))


class RefResNetFC(nn.Module):
    """001 Eq. 8 as in tests/test_theory_kernels.py::resnet_forward (sqrt 2 -> sqrt sigma_w2)."""

    def __init__(self, d, n, L, m, n_out, alpha, sigma_w2, act, stable):
        super().__init__()
        self.Ws = nn.Parameter(torch.empty(n, d))
        self.W = nn.ParameterList([nn.Parameter(torch.empty(n, n)) for _ in range(L * m)])
        self.Wf = nn.Parameter(torch.empty(n_out, n))
        self.n, self.L, self.m, self.alpha, self.sw2 = n, L, m, alpha, sigma_w2
        self.phi, self.s = activations.get(act), (1 / math.sqrt(L) if stable else 1.0)

    def forward(self, x):
        x = x.flatten(1)
        y = x @ self.Ws.T / math.sqrt(x.shape[1])
        c = math.sqrt(self.alpha / self.n)
        it = iter(self.W)
        for _ in range(self.L):
            g = c * (y @ next(it).T)
            for _ in range(1, self.m):
                g = c * ((math.sqrt(self.sw2) * self.phi(g)) @ next(it).T)
            y = y + self.s * g
        return y @ self.Wf.T / math.sqrt(self.n)

    def flat_params(self):
        return [self.Ws, *self.W, self.Wf]


class RefDenseNetFC(nn.Module):
    """001 Eq. 19 as in tests/test_theory_kernels.py::densenet_forward (separate W^{l,h})."""

    def __init__(self, d, n, L, n_out, sigma_w2, act):
        super().__init__()
        self.Ws = nn.Parameter(torch.empty(n, d))
        self.W = nn.ParameterList(
            [nn.Parameter(torch.empty(n, n)) for l in range(1, L + 1) for _ in range(l)]
        )
        self.Wf = nn.Parameter(torch.empty(n_out, n))
        self.n, self.L, self.sw2, self.phi = n, L, sigma_w2, activations.get(act)

    def forward(self, x):
        x = x.flatten(1)
        g = math.sqrt(self.sw2)
        qs = [g * self.phi(x @ self.Ws.T / math.sqrt(x.shape[1]))]
        it = iter(self.W)
        for l in range(1, self.L + 1):
            y = sum(qs[h] @ next(it).T for h in range(l)) / math.sqrt(self.n * l)
            qs.append(g * self.phi(y))
        return y @ self.Wf.T / math.sqrt(self.n)

    def flat_params(self):
        return [self.Ws, *self.W, self.Wf]

    def load_stacked(self, params, m):
        """Split the stacked ``[n, l n]`` layer matrices into the W^{l,h} of model ``m``."""
        flat = [params[0][m]]
        for l in range(1, self.L + 1):
            flat += list(params[l][m].split(self.n, dim=1))
        flat.append(params[-1][m])
        return flat


# ------------------------------------------------------------------ cases


def ref_fc(d_in, width, depth, n_out, act):
    """000 Eq. 1 net without dropout: Linear + activation per hidden layer, linear readout."""
    dims = [d_in] + [width] * depth + [n_out]
    layers = []
    for i, (a, b) in enumerate(zip(dims[:-1], dims[1:])):
        layers.append(nn.Linear(a, b))
        if i < depth:
            layers.append(Act(act))
    return nn.Sequential(nn.Flatten(), *layers)


def build(arch, run, in_shape, n_out):
    """The plain module for ``arch`` with ``run``'s hyperparameters."""
    if arch == "fc":
        return ref_fc(math.prod(in_shape), run.width, run.depth, n_out, run.activation)
    c, hw = in_shape[0], in_shape[-1]
    act = run.activation
    blocks = {
        "resnet18": (2, 2, 2, 2),
        "resnet34": (3, 4, 6, 3),
        "resnet32": (5, 5, 5),
        "resnet50": (8, 8, 8),
        "resnet104": (17, 17, 17),
    }
    base = arch.replace("stable_", "")
    if base in blocks:
        return RefResNet(
            blocks[base],
            run.width,
            act,
            n_out,
            c,
            arch.startswith("stable_"),
            (run.head_depth, run.head_width or run.width),
        )
    if arch == "vgg16":
        return RefVGG(run.width, act, n_out, 1, c)
    if arch == "vgg16x3":
        return RefVGG(run.width, act, n_out, 3, c)
    if arch == "vcnn":
        return ref_vcnn(run.width, run.depth, act, n_out, c)
    if arch == "lenet":
        return ref_lenet(run.width, run.depth, act, n_out, c, hw)
    d = math.prod(in_shape)
    if arch in ("resnet_fc", "stable_resnet_fc"):
        return RefResNetFC(
            d,
            run.width,
            run.depth,
            run.branch_depth,
            n_out,
            run.alpha,
            run.sigma_w2,
            act,
            arch == "stable_resnet_fc",
        )
    if arch == "densenet_fc":
        return RefDenseNetFC(d, run.width, run.depth, n_out, run.sigma_w2, act)
    raise KeyError(arch)


def from_stacked(arch, run, in_shape, n_out, params, buffers, m, dtype=torch.float32):
    """A plain module holding model ``m`` of stacked ``params`` / ``buffers``."""
    mod = build(arch, run, in_shape, n_out).to(dtype)
    mine = mod.load_stacked(params, m) if hasattr(mod, "load_stacked") else [p[m] for p in params]
    mod_params = mod.flat_params() if hasattr(mod, "flat_params") else list(mod.parameters())
    mod_bufs = [b for name, b in mod.named_buffers() if not name.endswith("num_batches_tracked")]
    if len(mod_params) != len(mine) or len(mod_bufs) != len(buffers):
        raise ValueError(f"{arch}: stacked state does not match the plain module")
    with torch.no_grad():
        for p, q in zip(mod_params, mine):
            p.copy_(q.reshape(p.shape))
        for b, q in zip(mod_bufs, buffers):
            b.copy_(q[m].reshape(b.shape))
    return mod
