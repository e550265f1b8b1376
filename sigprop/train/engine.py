"""The shard trainer: M models of one architecture family trained as one batched model.

Each model draws its own minibatches (a per-model permutation per epoch),
dropout masks and initial weights from its run key, so its trajectory is the
same whichever shard it is trained in.  The loss is the sum over models of
each model's mean cross-entropy, so every model gets exactly its own gradient.
A model whose loss becomes NaN or inf is recorded as diverged at that step and
frozen; a model that reaches its target (``target_acc`` / ``target_loss``) is
recorded and frozen; the others go on, and the shard stops when none is left.

Long shards checkpoint every ``checkpoint_every`` steps (atomically, loaded
with ``weights_only=True``); a rerun after a kill resumes from the last
checkpoint and produces the same rows as an uninterrupted run, because every
random number is a function of (key, step) rather than of a generator state.
A checkpoint records the code that made it (``code``, the train step's code
digest) and is resumed only under the same code (:meth:`ShardTrainer.fingerprint`).

Pruned shards (003 Hayou et al., Sec. 2.1, Eq. 4: the pruned net uses ``δ ∘ W``)
take ``masks`` aligned with the parameters: ``None`` for a dense parameter, a
``[M, ...]`` 0/1 tensor otherwise (all ones for the dense models of a mixed
shard).  The forward pass uses ``p * m``, so masked entries get no gradient,
and after every optimizer step the masked entries are set to exactly zero, for
any family.  The masks come from the prune stage (:func:`save_masks` /
:func:`load_masks`); a checkpoint records how many weights each mask keeps and
is ignored when resumed with other masks.
"""

from __future__ import annotations

import contextlib
import logging
import math
import os
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd
import torch
import torch.nn.functional as F

from .. import atomic, tables
from ..nets import families, rng
from ..runs import MIXED_BATCH_ARCHS, RunSpec, Shard
from ..tables import rebuild_hint
from .optim import StackedOptimizer

log = logging.getLogger("sigprop.train")

# precision -> (parameter dtype, TF32 allowed, autocast dtype for training)
PRECISIONS = {
    "float32": (torch.float32, False, None),
    "float64": (torch.float64, False, None),
    "tf32": (torch.float32, True, None),
    "bf16": (torch.float32, False, torch.bfloat16),
}
EVAL_TRAIN_MAX = 2048  # examples of the training set scored at each evaluation
EVAL_CHUNK = 4096  # examples per model per forward pass at evaluation
# seconds between progress lines ("step k/N, r steps/s") in a shard's log; the environment
# variable SIGPROP_PROGRESS_EVERY overrides it (read when a shard starts, e.g. in a job)
PROGRESS_EVERY = 30.0


def progress_interval() -> float:
    """Seconds between progress log lines: ``$SIGPROP_PROGRESS_EVERY`` or :data:`PROGRESS_EVERY`."""
    text = os.environ.get("SIGPROP_PROGRESS_EVERY", "").strip()
    if not text:
        return PROGRESS_EVERY
    try:
        value = float(text)
    except ValueError:
        raise ValueError(
            f"SIGPROP_PROGRESS_EVERY must be a number of seconds, got {text!r}"
        ) from None
    if not value >= 0:
        raise ValueError(f"SIGPROP_PROGRESS_EVERY must be >= 0, got {text!r}")
    return value


@dataclass
class Data:
    x_train: torch.Tensor
    y_train: torch.Tensor
    x_test: torch.Tensor
    y_test: torch.Tensor
    n_classes: int

    @property
    def in_shape(self) -> tuple[int, ...]:
        return tuple(self.x_train.shape[1:])


def set_precision_policy(precision: str) -> torch.dtype:
    """Set TF32 flags for ``precision`` and return the parameter dtype.

    ``float32`` (the default, and always for statistics at initialization) is
    IEEE float32 with TF32 off; ``float64`` on request; ``tf32`` and ``bf16``
    are for training only.
    """
    if precision not in PRECISIONS:
        raise ValueError(f"unknown precision '{precision}'; known: {sorted(PRECISIONS)}")
    dtype, tf32, _ = PRECISIONS[precision]
    torch.backends.cuda.matmul.allow_tf32 = tf32
    torch.backends.cudnn.allow_tf32 = tf32
    return dtype


def n_outputs(ds) -> int:
    """Outputs of a net on a prepared data set: its classes, or for a regression set the
    target's dimension (1 for scalar targets)."""
    if ds.meta.get("task") == "regression":
        y = np.asarray(ds.y_train)
        return int(y.shape[1]) if y.ndim > 1 else 1
    return int(ds.meta.get("n_classes") or int(np.max(ds.y_train)) + 1)


def data_dims(ds) -> tuple[tuple[int, ...], int]:
    """A prepared data set's input shape (one example) and the outputs a net on it has."""
    return tuple(ds.x_train.shape[1:]), n_outputs(ds)


def to_data(ds, device: torch.device, dtype: torch.dtype) -> Data:
    """A prepared data set (``sigprop.data.prepare.Dataset``) on a device, shapes kept
    (``n_classes``: :func:`n_outputs`; labels as integers, for classification)."""

    def arr(x):
        return torch.as_tensor(np.asarray(x), dtype=dtype, device=device)

    n_classes = n_outputs(ds)
    return Data(
        arr(ds.x_train),
        torch.as_tensor(ds.y_train, device=device).long(),
        arr(ds.x_test),
        torch.as_tensor(ds.y_test, device=device).long(),
        n_classes,
    )


def initial_state(
    shard: Shard, in_shape: tuple[int, ...], n_out: int, device: torch.device, dtype: torch.dtype
) -> tuple[list[torch.Tensor], list[torch.Tensor]]:
    """Initial parameters and buffers of every model of the shard (stacked)."""
    keys = torch.tensor([r.key for r in shard.runs], device=device, dtype=torch.int64)
    fam = families.get(shard.runs[0].arch)
    return fam.init(shard.runs, keys, tuple(in_shape), n_out, device, dtype)


def _atomic_save(obj, path: Path) -> None:
    """``torch.save`` through :func:`sigprop.atomic.target`: no temporary file is left when the
    write fails, and a full disk says so with the path."""
    with atomic.target(path) as tmp:
        torch.save(obj, tmp)


def save_state(params, buffers, shard: Shard, path: Path) -> None:
    _atomic_save(
        {
            "shard_id": shard.shard_id,
            "params": [p.detach().cpu() for p in params],
            "buffers": [b.detach().cpu() for b in buffers],
        },
        path,
    )


def load_state(path: Path, shard: Shard) -> tuple[list[torch.Tensor], list[torch.Tensor]]:
    try:
        d = torch.load(path, map_location="cpu", weights_only=True)
    except Exception as e:  # truncated or foreign file
        raise ValueError(f"{path}: not a readable parameter file ({e})") from e
    if not isinstance(d, dict) or d.get("shard_id") != shard.shard_id:
        found = d.get("shard_id") if isinstance(d, dict) else "?"
        raise ValueError(
            f"{path}: holds the initial parameters of shard {found}; the workflow "
            f"expects shard {shard.shard_id} of study {shard.study}: "
            f"{rebuild_hint(path)}"
        )
    return list(d["params"]), list(d.get("buffers", []))


def save_masks(masks: list, shard: Shard, path: Path) -> None:
    """The prune stage's mask file: ``{"shard_id", "run_ids", "masks"}`` where ``masks`` is a
    list aligned with the shard's parameters of ``None`` (dense) or ``[M, ...]`` bool tensors."""
    _atomic_save(
        {
            "shard_id": shard.shard_id,
            "run_ids": [r.run_id for r in shard.runs],
            "masks": [None if m is None else m.detach().to("cpu", torch.bool) for m in masks],
        },
        path,
    )


def load_masks(path: Path, shard: Shard) -> list:
    """Masks saved by :func:`save_masks` (``weights_only=True``), checked against ``shard``."""
    try:
        d = torch.load(path, map_location="cpu", weights_only=True)
    except Exception as e:
        raise ValueError(f"{path}: not a readable mask file ({e})") from e
    runs = [r.run_id for r in shard.runs]
    if not isinstance(d, dict) or d.get("shard_id") != shard.shard_id or d.get("run_ids") != runs:
        found = d.get("shard_id") if isinstance(d, dict) else "?"
        raise ValueError(
            f"{path}: holds the masks of shard {found}; the workflow expects shard "
            f"{shard.shard_id} of study {shard.study} ({len(runs)} runs): "
            f"{rebuild_hint(path)}"
        )
    return list(d["masks"])


def milestones(run: RunSpec) -> list[int]:
    """Steps at which the learning rate is multiplied by ``lr_gamma``."""
    out = []
    for tok in filter(None, (t.strip() for t in run.lr_milestones.split(","))):
        v = float(tok)
        out.append(int(round(v * run.steps)) if v < 1 else int(v))
    if run.lr_step_every > 0:
        out += list(range(run.lr_step_every, run.steps, run.lr_step_every))
    return sorted(out)


# a stacked weight [M, out, in] with at least this many rows and columns is kept in [M, in, out]
# memory order (same shape and values): the batched matmul reads it without a transpose, and
# autograd's weight gradient (a transposed [M, in, out] product) already has the parameter's
# layout, so the optimizer's elementwise update streams through memory instead of striding.
# Measured 1.0-1.35x faster per forward + backward + update for 32-512 units, slower for a
# 10-output readout (docs/performance.md), which keeps the plain layout.  Every training shard
# of the default run gives the same bits either way (checked against the previous layout).
WIDE_LAYOUT_MIN = 16


def _param_layout(p: torch.Tensor) -> torch.Tensor:
    """``p`` in the memory order the shard trains it in (:data:`WIDE_LAYOUT_MIN`)."""
    if p.dim() == 3 and p.shape[1] >= WIDE_LAYOUT_MIN and p.shape[2] >= WIDE_LAYOUT_MIN:
        return p.mT.contiguous().mT
    return p


class ShardTrainer:
    """Train every model of a shard for its step budget (or until its target)."""

    def __init__(
        self,
        shard: Shard,
        data: Data,
        params: list[torch.Tensor],
        device: torch.device,
        buffers: list[torch.Tensor] | None = None,
        checkpoint: Path | None = None,
        checkpoint_every: int = 0,
        masks: list[torch.Tensor | None] | None = None,
        eval_splits: tuple[str, ...] = ("train", "test"),
        code: str | None = None,
    ):
        runs = shard.runs
        r0 = runs[0]
        for r in runs:
            if r.shape_key() != r0.shape_key():
                raise ValueError(f"shard {shard.shard_id}: run {r.run_id} does not share shapes")
        self.eval_splits = _check_eval_splits(shard, eval_splits)
        self.family = families.get(r0.arch)
        self.dtype = set_precision_policy(r0.precision)
        if data.x_train.dtype != self.dtype or data.x_train.device != device:
            data = Data(
                data.x_train.to(device, self.dtype),
                data.y_train.to(device),
                data.x_test.to(device, self.dtype),
                data.y_test.to(device),
                data.n_classes,
            )
        self.shard, self.runs, self.data, self.device = shard, runs, data, device
        self.autocast = PRECISIONS[r0.precision][2]
        self.r0 = r0
        self.M = len(runs)

        def vec(name):
            return torch.tensor(
                [float(getattr(r, name)) for r in runs], device=device, dtype=self.dtype
            )

        self.keys = torch.tensor([r.key for r in runs], device=device, dtype=torch.int64)
        self.lr0 = vec("lr")
        self.target_acc, self.target_loss = vec("target_acc"), vec("target_loss")
        self._milestones = [milestones(r) for r in runs]
        self.params = [
            _param_layout(p.to(device=device, dtype=self.dtype).clone()).requires_grad_(True)
            for p in params
        ]
        self.buffers = [b.to(device=device) for b in (buffers or [])]
        self.masks = self._check_masks(masks)
        self._dropped = [None if m is None else m == 0 for m in self.masks]
        self._apply_masks()
        nesterov = {r.nesterov for r in runs}
        if len(nesterov) > 1:
            raise ValueError(f"shard {shard.shard_id}: mixed nesterov settings")
        self.opt = StackedOptimizer(
            self.params,
            r0.optimizer,
            vec("momentum"),
            nesterov=nesterov.pop(),
            weight_decay=vec("weight_decay"),
        )
        self.alive = torch.ones(self.M, dtype=torch.bool, device=device)  # not diverged
        self.active = torch.ones(self.M, dtype=torch.bool, device=device)  # still training
        self._all_active = True
        self._any_active = True  # host copies of active.all() / .any(): no sync per step
        self._n_active_changes = 0
        self._all_milestones = np.array(sorted({s for ms in self._milestones for s in ms}))
        self._lr_key, self._lr_cache, self._lr_scalar = None, None, None
        self._acc: list = [None] * len(self.params)  # micro-batches' summed gradients
        self.diverged_step = [-1] * self.M
        self.target_step = [-1] * self.M
        self.step = 0
        self.rows: list[tuple] = []  # (model index, step, metric, value)
        self.loss_acc = torch.zeros(self.M, dtype=torch.float64, device=device)
        self.loss_n = 0
        self.checkpoint, self.checkpoint_every = checkpoint, checkpoint_every
        self.code = code
        n = data.x_train.shape[0]
        sizes = [r.batch_size for r in runs]
        if max(sizes) > n:
            raise ValueError(f"batch_size {max(sizes)} exceeds the {n} training examples")
        # micro-batching (004 batch-size sweeps, RunSpec.micro_batch): c examples per model and
        # step; a model of batch b accumulates b / c steps, then takes its optimizer step
        self.micro = int(r0.micro_batch)
        if self.micro:
            if r0.arch not in MIXED_BATCH_ARCHS:
                raise ValueError(
                    f"shard {shard.shard_id}: micro_batch needs a family without "
                    f"BatchNorm ({', '.join(MIXED_BATCH_ARCHS)}), not '{r0.arch}'"
                )
            bad = [b for b in sizes if b % self.micro]
            if bad:
                raise ValueError(
                    f"shard {shard.shard_id}: batch_size {bad[0]} is not a multiple "
                    f"of micro_batch {self.micro}"
                )
        self.accum = torch.tensor(
            [b // self.micro if self.micro else 1 for b in sizes], device=device
        )
        self.batch_max = self.micro or max(sizes)
        # models grouped by batch size: each group walks its own epochs
        self._groups = {}
        for i, b in enumerate(sizes):
            self._groups.setdefault(b, []).append(i)
        self._group_idx = {b: torch.tensor(ix, device=device) for b, ix in self._groups.items()}
        self._perm_cache: dict = {}
        # loss weight of each sample slot: 1/b for a model's real samples, 0 for padding
        slots = torch.arange(self.batch_max, device=device).view(1, -1)
        bs = torch.tensor(sizes, device=device).view(-1, 1)
        self.sample_w = torch.where(slots < bs, 1.0 / bs, torch.zeros((), device=device)).to(
            self.dtype
        )

    # -- pruning masks (003) --------------------------------------------------
    def _check_masks(self, masks) -> list:
        """Masks on the device in the parameter dtype; ``[]`` for a dense shard."""
        if masks is None or all(m is None for m in masks):
            return []
        if len(masks) != len(self.params):
            raise ValueError(
                f"shard {self.shard.shard_id}: {len(masks)} masks for {len(self.params)} parameters"
            )
        out = []
        for i, (p, m) in enumerate(zip(self.params, masks)):
            if m is not None and tuple(m.shape) != tuple(p.shape):
                raise ValueError(
                    f"shard {self.shard.shard_id}: mask {i} has shape "
                    f"{tuple(m.shape)}, parameter {tuple(p.shape)}"
                )
            out.append(None if m is None else m.to(device=self.device, dtype=self.dtype))
        return out

    def _apply_masks(self) -> None:
        """Set the masked entries to exactly zero (after init and every optimizer step)."""
        if not self.masks:
            return
        with torch.no_grad():
            for p, drop in zip(self.params, self._dropped):
                if drop is not None:
                    p.masked_fill_(drop, 0.0)

    def _masked_params(self) -> list[torch.Tensor]:
        if not self.masks:
            return self.params
        return [p if m is None else p * m for p, m in zip(self.params, self.masks)]

    def _mask_counts(self) -> list:
        """Weights kept per model and mask (checkpoint fingerprint of the masks)."""
        return [None if m is None else (m != 0).flatten(1).sum(1).cpu() for m in self.masks]

    # -- data -------------------------------------------------------------
    def batch(self, step: int) -> tuple[torch.Tensor, torch.Tensor]:
        """Each model's minibatch at ``step``, padded to the largest batch size: ``[M, B, ...]``.

        A model with batch size b takes examples ``[i b, (i+1) b)`` of its own
        permutation of the training set for its epoch ``step // (n // b)``.  Micro-batched
        (``micro_batch`` c): step t is micro-step ``j = t mod (b/c)`` of update ``u = t div (b/c)``,
        examples ``[i b + j c, i b + (j+1) c)`` with ``i, epoch`` from ``u`` as above.
        """
        n = self.data.x_train.shape[0]
        one = len(self._group_idx) == 1  # one batch size: no padding, no scatter
        idx = (
            None
            if one
            else torch.zeros(self.M, self.batch_max, dtype=torch.int64, device=self.device)
        )
        for b, members in self._group_idx.items():
            a = b // self.micro if self.micro else 1
            u, j = divmod(step, a)
            epoch, i = divmod(u, n // b)
            key = (b, epoch)
            if key not in self._perm_cache:
                self._perm_cache = {k: v for k, v in self._perm_cache.items() if k[0] != b}
                self._perm_cache[key] = rng.permutations(self.keys[members], epoch, n)
            w = self.micro or b
            lo = i * b + j * w
            if one:
                idx = self._perm_cache[key][:, lo : lo + w]
            else:
                idx[members, :w] = self._perm_cache[key][:, lo : lo + w]
        flat = idx.reshape(-1)
        x = torch.index_select(self.data.x_train, 0, flat)
        y = torch.index_select(self.data.y_train, 0, flat)
        return (
            x.view((self.M, idx.shape[1]) + tuple(self.data.x_train.shape[1:])),
            y.view(self.M, idx.shape[1]),
        )

    def lr(self, step: int) -> torch.Tensor:
        """Per-model learning rates at ``step`` (schedules applied), 0 for stopped models."""
        factor = torch.tensor(
            [
                r.lr_gamma ** sum(step >= s for s in ms)
                for r, ms in zip(self.runs, self._milestones)
            ],
            device=self.device,
            dtype=self.dtype,
        )
        return self.lr0 * factor * self.active.to(self.dtype)

    def _forward(self, x, train: bool):
        ctx = (
            torch.autocast(self.device.type, dtype=self.autocast)
            if train and self.autocast is not None
            else contextlib.nullcontext()
        )
        with ctx:
            logits, buffers = self.family.apply(
                self.runs, self._masked_params(), self.buffers, x, train, self.keys, self.step
            )
        return logits.float() if self.autocast is not None else logits, buffers

    # -- training -----------------------------------------------------------
    def _where_active(self, t: torch.Tensor, other: torch.Tensor | float = 0.0) -> torch.Tensor:
        """``t`` for the models still training, ``other`` for the rest (no work while all are:
        the common case, kept exact because ``where(True, t, .)`` is ``t``)."""
        if self._all_active:
            return t
        if not torch.is_tensor(other):
            other = torch.zeros((), dtype=t.dtype, device=t.device)
        return torch.where(self.active.view((-1,) + (1,) * (t.dim() - 1)), t, other)

    def _set_active(self, active: torch.Tensor) -> None:
        self.active = active
        self._all_active = bool(active.all())
        self._any_active = bool(active.any())
        self._n_active_changes += 1

    def train_step(self) -> None:
        x, y = self.batch(self.step)
        logits, buffers = self._forward(x, train=True)
        m, b, c = logits.shape
        loss = (
            F.cross_entropy(logits.reshape(m * b, c), y.reshape(-1), reduction="none").view(m, b)
            * self.sample_w
        ).sum(1)
        finite = torch.isfinite(loss)
        newly = None if bool(finite.all()) else self.alive & ~finite
        if newly is not None and bool(newly.any()):
            for i in torch.nonzero(newly).flatten().tolist():
                self.diverged_step[i] = self.step
                log.warning("run %s diverged at step %d", self.runs[i].run_id, self.step)
            self.alive &= finite
            self._set_active(self.active & finite)
        # gradients straight from autograd: no accumulation into .grad (which copied every
        # gradient of a transposed weight into the parameter's layout)
        grads = list(
            torch.autograd.grad(self._where_active(loss).sum(), self.params, allow_unused=True)
        )
        # a diverged model's NaNs must not reach optimizer state
        if not self._all_active:
            grads = [None if g is None else self._where_active(g) for g in grads]
        if self.micro:
            grads = [
                g if a is None else (a if g is None else g + a) for g, a in zip(grads, self._acc)
            ]
            update = (self.step + 1) % self.accum == 0
            self.opt.step(self._lr(), update, grads=grads, lr_scalar=self._lr_scalar)
            # models that stepped start a new accumulation
            self._acc = [
                None
                if g is None
                else torch.where(update.view((-1,) + (1,) * (g.dim() - 1)), torch.zeros_like(g), g)
                for g in grads
            ]
            loss = loss * self.accum  # report the micro-batch's mean loss
        else:
            self.opt.step(self._lr(), grads=grads, lr_scalar=self._lr_scalar)
        if self.buffers:
            self.buffers = [self._where_active(nb, ob) for nb, ob in zip(buffers, self.buffers)]
        self.family.constrain(self.runs, self.params, self.buffers)
        self._apply_masks()
        self.loss_acc += self._where_active(loss.detach().double())
        self.loss_n += 1
        self.step += 1

    def _lr(self) -> torch.Tensor:
        """:meth:`lr` at the current step, rebuilt only when a milestone is passed or a model
        stops, not at every step."""
        key = (self._lr_epoch(self.step), self._all_active, self._n_active_changes)
        if key != self._lr_key:
            self._lr_key, self._lr_cache = key, self.lr(self.step)
            first = self._lr_cache[:1]
            # one rate for every model (the usual shard): the optimizer takes a scalar
            self._lr_scalar = float(first) if bool((self._lr_cache == first).all()) else None
        return self._lr_cache

    def _lr_epoch(self, step: int) -> int:
        """How many schedule milestones of any model lie at or before ``step``."""
        if not len(self._all_milestones):
            return 0
        return int(np.searchsorted(self._all_milestones, step, side="right"))

    @torch.no_grad()
    def evaluate(self) -> None:
        d = self.data
        cap = self.shard.runs[0].eval_max or None  # a shape field: one value per shard
        n_tr = min(EVAL_TRAIN_MAX, d.x_train.shape[0], cap or EVAL_TRAIN_MAX)
        scores = {}
        for split, x, y in (
            ("train", d.x_train[:n_tr], d.y_train[:n_tr]),
            ("test", d.x_test[:cap], d.y_test[:cap]),
        ):
            if x.shape[0] == 0 or split not in self.eval_splits:
                continue
            loss_sum = torch.zeros(self.M, dtype=torch.float64, device=self.device)
            correct = torch.zeros(self.M, dtype=torch.float64, device=self.device)
            for s in range(0, x.shape[0], EVAL_CHUNK):
                xc, yc = x[s : s + EVAL_CHUNK], y[s : s + EVAL_CHUNK]
                logits, _ = self._forward(xc.unsqueeze(0).expand(self.M, *xc.shape), train=False)
                m, b, c = logits.shape
                loss_sum += (
                    F.cross_entropy(logits.reshape(m * b, c), yc.repeat(m), reduction="none")
                    .view(m, b)
                    .double()
                    .sum(1)
                )
                correct += (logits.argmax(-1) == yc.unsqueeze(0)).double().sum(1)
            scores[f"{split}_loss"] = loss_sum / x.shape[0]
            scores[f"{split}_acc"] = correct / x.shape[0]
        for k, v in scores.items():
            self._record(k, v)
        if self.loss_n:
            self._record("batch_loss", self.loss_acc / self.loss_n)
            self.loss_acc.zero_()
            self.loss_n = 0
        self._check_targets(scores)

    def _check_targets(self, scores: dict) -> None:
        hit = torch.zeros(self.M, dtype=torch.bool, device=self.device)
        if "test_acc" in scores:
            hit |= (self.target_acc > 0) & (scores["test_acc"] >= self.target_acc.double())
        if "train_loss" in scores:
            hit |= (self.target_loss > 0) & (scores["train_loss"] <= self.target_loss.double())
        hit &= self.active
        if not bool(hit.any()):
            return
        for i in torch.nonzero(hit).flatten().tolist():
            self.target_step[i] = self.step
        self._set_active(self.active & ~hit)

    def _record(self, metric: str, values: torch.Tensor) -> None:
        vals = values.double().cpu().tolist()
        alive = self.alive.cpu().tolist()
        for i, v in enumerate(vals):
            self.rows.append((i, self.step, metric, v if alive[i] else math.nan))

    def run(self, progress_every: float | None = None) -> pd.DataFrame:
        """Train to the end (resuming from the checkpoint if there is one); every
        ``progress_every`` seconds (default :func:`progress_interval`) log the step, the rate
        in steps/s since this start, and how many models still train."""
        if progress_every is None:
            progress_every = progress_interval()
        self._maybe_resume()
        total = self.r0.steps
        if self.step == 0 and not self.rows:
            self.evaluate()
        t0, last = time.time(), time.time()
        start_step = self.step
        while self.step < total and self._any_active:
            self.train_step()
            if self.step % self.r0.eval_every == 0 or self.step == total:
                self.evaluate()
            if (
                self.checkpoint_every
                and self.step % self.checkpoint_every == 0
                and self.step < total
            ):
                self._save_checkpoint()
            if time.time() - last > progress_every:
                rate = (self.step - start_step) / (time.time() - t0)
                log.info(
                    "shard %s: step %d/%d, %.1f steps/s, %d/%d models training",
                    self.shard.shard_id,
                    self.step,
                    total,
                    rate,
                    int(self.active.sum()),
                    self.M,
                )
                last = time.time()
        for i in range(self.M):
            self.rows.append(
                (i, self.diverged_step[i], "diverged_step", float(self.diverged_step[i]))
            )
            if self.runs[i].target_acc > 0 or self.runs[i].target_loss > 0:
                self.rows.append(
                    (i, self.target_step[i], "target_step", float(self.target_step[i]))
                )
        return self.frame()

    # -- checkpoints ----------------------------------------------------------
    def fingerprint(self) -> dict:
        """What determines how training continues from a checkpoint beyond the shard's run
        specs (its id hashes them): the code that trains the shard (``code``: the train step's
        code digest, which the train step passes, the same one that makes Snakemake rerun the
        job; None in a direct call that gives none), torch, the device type, the parameter dtype
        and the evaluation splits.  A checkpoint is resumed only when its fingerprint is this
        one, so a job rerun for a code change never resumes the state that code left."""
        return {
            "code": self.code,
            "torch": str(torch.__version__),
            "device": self.device.type,
            "dtype": str(self.params[0].dtype) if self.params else "",
            "eval_splits": list(self.eval_splits),
        }

    def _state(self) -> dict:
        return {
            "shard_id": self.shard.shard_id,
            "step": self.step,
            "fingerprint": self.fingerprint(),
            "params": [p.detach().cpu() for p in self.params],
            "buffers": [b.detach().cpu() for b in self.buffers],
            "opt": {
                "kind": self.opt.kind,
                "state": [None if s is None else s.cpu() for s in self.opt.state],
            },
            "alive": self.alive.cpu(),
            "active": self.active.cpu(),
            "diverged_step": list(self.diverged_step),
            "target_step": list(self.target_step),
            "loss_acc": self.loss_acc.cpu(),
            "loss_n": self.loss_n,
            "mask_counts": self._mask_counts(),
            "grads": [None if g is None else g.detach().cpu() for g in self._acc]
            if self.micro
            else [],
            "rows": [list(r) for r in self.rows],
        }

    def _save_checkpoint(self) -> None:
        if self.checkpoint is not None:
            _atomic_save(self._state(), self.checkpoint)
            log.info("shard %s: checkpoint at step %d", self.shard.shard_id, self.step)

    def _maybe_resume(self) -> None:
        """Continue from the checkpoint when it is this shard's, made with these masks and the
        same :meth:`fingerprint`; otherwise (or when it cannot be read or restored) warn, naming
        the file and why, and start from step 0."""
        if self.checkpoint is None or not Path(self.checkpoint).exists():
            return
        try:
            st = torch.load(self.checkpoint, map_location="cpu", weights_only=True)
        except Exception as e:
            log.warning("ignoring unreadable checkpoint %s (%s); starting over", self.checkpoint, e)
            return
        if not isinstance(st, dict) or not CHECKPOINT_KEYS <= set(st):
            have = sorted(st) if isinstance(st, dict) else type(st).__name__
            log.warning(
                "ignoring checkpoint %s: not a training checkpoint (holds %s); starting over",
                self.checkpoint,
                have,
            )
            return
        if st.get("shard_id") != self.shard.shard_id:
            log.warning("ignoring checkpoint %s of another shard", self.checkpoint)
            return
        if not _same_counts(st.get("mask_counts", []), self._mask_counts()):
            log.warning(
                "ignoring checkpoint %s made with other pruning masks; starting over",
                self.checkpoint,
            )
            return
        mine, theirs = self.fingerprint(), st.get("fingerprint") or {}
        differ = sorted(k for k in mine if theirs.get(k) != mine[k])
        if differ:
            log.warning(
                "ignoring checkpoint %s: made with another %s (%s); training the shard from step 0",
                self.checkpoint,
                ", ".join(differ),
                "; ".join(f"{k}: {theirs.get(k, 'not recorded')} -> {mine[k]}" for k in differ),
            )
            return
        saved = self._state()
        try:
            self._restore(st)
        except Exception as e:  # a checkpoint whose contents do not fit this shard
            self._restore(saved)
            log.warning(
                "ignoring checkpoint %s: its contents do not fit shard %s (%s: %s); starting over",
                self.checkpoint,
                self.shard.shard_id,
                type(e).__name__,
                e,
            )
            return
        log.info("shard %s: resumed from checkpoint at step %d", self.shard.shard_id, self.step)

    def _restore(self, st: dict) -> None:
        with torch.no_grad():
            if len(st["params"]) != len(self.params):
                raise ValueError(f"{len(st['params'])} parameter tensors, not {len(self.params)}")
            for p, q in zip(self.params, st["params"]):
                if tuple(q.shape) != tuple(p.shape):
                    raise ValueError(f"a parameter of shape {tuple(q.shape)}, not {tuple(p.shape)}")
                p.copy_(q.to(p.device, p.dtype))
        self.buffers = [b.to(self.device) for b in st["buffers"]]
        self.opt.load_state_dict(
            {
                "kind": st["opt"]["kind"],
                "state": [None if s is None else s.to(self.device) for s in st["opt"]["state"]],
            }
        )
        self.alive = st["alive"].to(self.device)
        self._set_active(st["active"].to(self.device))
        self.diverged_step = list(st["diverged_step"])
        self.target_step = list(st["target_step"])
        self.loss_acc = st["loss_acc"].to(self.device)
        self.loss_n = int(st["loss_n"])
        self.rows = [tuple(r) for r in st["rows"]]
        for k, (p, g) in enumerate(zip(self.params, st.get("grads") or [])):
            self._acc[k] = None if g is None else g.to(p.device, p.dtype)  # a micro-batch's sum
        self.step = int(st["step"])

    def frame(self) -> pd.DataFrame:
        """Long-format rows with each run's hyperparameters as columns."""
        idx, step, metric, value = zip(*self.rows) if self.rows else ((), (), (), ())
        df = pd.DataFrame(
            {
                "model": np.asarray(idx, dtype=np.int64),
                "step": np.asarray(step, dtype=np.int64),
                "metric": pd.array(metric, dtype="string"),
                "value": np.asarray(value, dtype=np.float64),
            }
        )
        return tables.run_rows(self.shard, df, self.device.type, PRECISIONS[self.r0.precision][1])


def _check_eval_splits(shard: Shard, splits) -> tuple[str, ...]:
    """The evaluation splits, checked against what the shard's stopping rules read: a
    ``target_acc`` needs the test split, a ``target_loss`` the training split."""
    splits = tuple(splits)
    if not splits or set(splits) - {"train", "test"}:
        raise ValueError(
            f"shard {shard.shard_id}: eval_splits must be a non-empty subset of "
            f"('train', 'test'), got {splits!r}"
        )
    for r in shard.runs:
        if r.target_acc > 0 and "test" not in splits:
            raise ValueError(
                f"shard {shard.shard_id}: run {r.run_id} stops at a test accuracy "
                "(target_acc) but the study does not evaluate the test split"
            )
        if r.target_loss > 0 and "train" not in splits:
            raise ValueError(
                f"shard {shard.shard_id}: run {r.run_id} stops at a training loss "
                "(target_loss) but the study does not evaluate the training split"
            )
    return splits


CHECKPOINT_KEYS = {
    "shard_id",
    "step",
    "params",
    "buffers",
    "opt",
    "alive",
    "active",
    "diverged_step",
    "target_step",
    "loss_acc",
    "loss_n",
    "rows",
}
"""What a training checkpoint holds (:meth:`ShardTrainer._state`)."""


def _same_counts(a: list, b: list) -> bool:
    """Equal mask fingerprints (``[]`` for a dense shard, also in checkpoints that predate masks)."""
    return len(a) == len(b) and all(
        (x is None and y is None) or (x is not None and y is not None and torch.equal(x, y))
        for x, y in zip(a, b)
    )
