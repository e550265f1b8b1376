"""The shard trainer: M fully connected models trained as one batched model.

Each model draws its own minibatches (a per-model permutation per epoch),
dropout masks and initial weights from its run key, so its trajectory is the
same whichever shard it is trained in.  A model whose loss becomes NaN or inf
is recorded as diverged at that step and frozen; the others go on.

Long shards checkpoint every ``checkpoint_every`` steps (atomically, loaded
with ``weights_only=True``); a rerun after a kill resumes from the last
checkpoint and produces the same rows as an uninterrupted run, because every
random number is a function of (key, step) rather than of a generator state.
"""

from __future__ import annotations

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

from ..nets import fc, rng
from ..runs import Shard
from .optim import StackedOptimizer

log = logging.getLogger("sigprop.train")

PRECISIONS = {"float32": torch.float32, "float64": torch.float64}
EVAL_TRAIN_MAX = 2048  # examples of the training set scored at each evaluation


@dataclass
class Data:
    x_train: torch.Tensor
    y_train: torch.Tensor
    x_test: torch.Tensor
    y_test: torch.Tensor
    n_classes: int


def pick_device(requested: str = "auto") -> torch.device:
    if requested == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    return torch.device(requested)


def set_precision_policy(precision: str) -> torch.dtype:
    """Statistics and the default run use IEEE float32: TF32 is switched off."""
    if precision not in PRECISIONS:
        raise ValueError(f"unknown precision '{precision}'; known: {sorted(PRECISIONS)}")
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    return PRECISIONS[precision]


def to_data(ds, device: torch.device, dtype: torch.dtype) -> Data:
    """Flatten a prepared data set (``sigprop.data.prepare.Dataset``) onto a device."""
    def flat(x):
        return torch.as_tensor(np.asarray(x).reshape(len(x), -1), dtype=dtype, device=device)
    n_classes = int(ds.meta.get("n_classes") or int(np.max(ds.y_train)) + 1)
    return Data(flat(ds.x_train), torch.as_tensor(ds.y_train, device=device).long(),
                flat(ds.x_test), torch.as_tensor(ds.y_test, device=device).long(), n_classes)


def initial_params(shard: Shard, d_in: int, d_out: int, device: torch.device,
                   dtype: torch.dtype) -> list[torch.Tensor]:
    r0 = shard.runs[0]
    keys = torch.tensor([r.key for r in shard.runs], device=device, dtype=torch.int64)
    dims = fc.layer_dims(d_in, r0.width, r0.depth, d_out)
    sw = torch.tensor([r.sigma_w2 for r in shard.runs], dtype=torch.float64)
    sb = torch.tensor([r.sigma_b2 for r in shard.runs], dtype=torch.float64)
    return fc.init_params(keys, sw, sb, [r.init for r in shard.runs], dims, dtype)


def _atomic_save(obj, path: Path) -> None:
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.tmp{os.getpid()}")
    torch.save(obj, tmp)
    os.replace(tmp, path)


def save_params(params: list[torch.Tensor], shard: Shard, path: Path) -> None:
    _atomic_save({"shard_id": shard.shard_id, "params": [p.detach().cpu() for p in params]}, path)


def load_params(path: Path, shard: Shard) -> list[torch.Tensor]:
    try:
        d = torch.load(path, map_location="cpu", weights_only=True)
    except Exception as e:  # truncated or foreign file
        raise ValueError(f"{path}: not a readable parameter file ({e})") from e
    if not isinstance(d, dict) or d.get("shard_id") != shard.shard_id:
        raise ValueError(f"{path}: parameters are for shard {d.get('shard_id') if isinstance(d, dict) else '?'},"
                         f" expected {shard.shard_id}")
    return list(d["params"])


class ShardTrainer:
    """Train every model of a fully connected shard for its step budget."""

    def __init__(self, shard: Shard, data: Data, params: list[torch.Tensor],
                 device: torch.device, checkpoint: Path | None = None,
                 checkpoint_every: int = 0):
        runs = shard.runs
        r0 = runs[0]
        for r in runs:
            if r.shape_key() != r0.shape_key():
                raise ValueError(f"shard {shard.shard_id}: run {r.run_id} does not share shapes")
        if r0.arch != "fc":
            raise ValueError(f"shard {shard.shard_id}: architecture '{r0.arch}' is not supported "
                             "by the fully connected trainer")
        self.shard, self.data, self.device = shard, data, device
        self.dtype = set_precision_policy(r0.precision)
        self.r0 = r0
        self.M = len(runs)
        self.keys = torch.tensor([r.key for r in runs], device=device, dtype=torch.int64)
        self.keep = torch.tensor([r.keep_rate for r in runs], device=device, dtype=self.dtype)
        self.lr = torch.tensor([r.lr for r in runs], device=device, dtype=self.dtype)
        mom = torch.tensor([r.momentum for r in runs], device=device, dtype=self.dtype)
        self.params = [p.to(device=device, dtype=self.dtype).clone().requires_grad_(True)
                       for p in params]
        self.opt = StackedOptimizer(self.params, r0.optimizer, mom)
        self.alive = torch.ones(self.M, dtype=torch.bool, device=device)
        self.diverged_step = [-1] * self.M
        self.step = 0
        self.rows: list[tuple] = []  # (model index, step, metric, value)
        self.loss_acc = torch.zeros(self.M, dtype=torch.float64, device=device)
        self.loss_n = 0
        self.checkpoint, self.checkpoint_every = checkpoint, checkpoint_every
        n = data.x_train.shape[0]
        if r0.batch_size > n:
            raise ValueError(f"batch_size {r0.batch_size} exceeds the {n} training examples")
        self.batches_per_epoch = n // r0.batch_size
        self._perm_epoch, self._perm = -1, None
        self._use_dropout = bool((self.keep < 1).any())

    # -- data -------------------------------------------------------------
    def batch(self, step: int) -> tuple[torch.Tensor, torch.Tensor]:
        epoch, i = divmod(step, self.batches_per_epoch)
        if epoch != self._perm_epoch:
            self._perm = rng.permutations(self.keys, epoch, self.data.x_train.shape[0])
            self._perm_epoch = epoch
        b = self.r0.batch_size
        idx = self._perm[:, i * b:(i + 1) * b]
        return self.data.x_train[idx], self.data.y_train[idx]

    # -- training -----------------------------------------------------------
    def train_step(self) -> None:
        x, y = self.batch(self.step)
        keep = self.keep if self._use_dropout else None
        logits = fc.forward(self.params, x, self.r0.activation, keep, self.keys, self.step)
        m, b, c = logits.shape
        loss = F.cross_entropy(logits.reshape(m * b, c), y.reshape(-1),
                               reduction="none").view(m, b).mean(1)
        finite = torch.isfinite(loss)
        newly = self.alive & ~finite
        if bool(newly.any()):
            for i in torch.nonzero(newly).flatten().tolist():
                self.diverged_step[i] = self.step
                log.warning("run %s diverged at step %d", self.shard.runs[i].run_id, self.step)
            self.alive &= finite
        for p in self.params:
            p.grad = None
        total = torch.where(self.alive, loss, torch.zeros_like(loss)).sum()
        total.backward()
        for p in self.params:  # a diverged model's NaNs must not reach optimizer state
            p.grad = torch.where(self.alive.view((-1,) + (1,) * (p.dim() - 1)),
                                 p.grad, torch.zeros_like(p.grad))
        self.opt.step(self.lr * self.alive.to(self.lr.dtype))
        self.loss_acc += torch.where(self.alive, loss.detach().double(),
                                     torch.zeros_like(self.loss_acc))
        self.loss_n += 1
        self.step += 1

    @torch.no_grad()
    def evaluate(self) -> None:
        d = self.data
        n_tr = min(EVAL_TRAIN_MAX, d.x_train.shape[0])
        for split, x, y in (("train", d.x_train[:n_tr], d.y_train[:n_tr]),
                            ("test", d.x_test, d.y_test)):
            if x.shape[0] == 0:
                continue
            logits = fc.forward(self.params, x.unsqueeze(0).expand(self.M, -1, -1),
                                self.r0.activation)
            m, b, c = logits.shape
            loss = F.cross_entropy(logits.reshape(m * b, c), y.repeat(m),
                                   reduction="none").view(m, b).mean(1)
            acc = (logits.argmax(-1) == y.unsqueeze(0)).double().mean(1)
            self._record(f"{split}_loss", loss)
            self._record(f"{split}_acc", acc)
        if self.loss_n:
            self._record("batch_loss", self.loss_acc / self.loss_n)
            self.loss_acc.zero_()
            self.loss_n = 0

    def _record(self, metric: str, values: torch.Tensor) -> None:
        vals = values.double().cpu().tolist()
        alive = self.alive.cpu().tolist()
        for i, v in enumerate(vals):
            self.rows.append((i, self.step, metric, v if alive[i] else math.nan))

    def run(self, progress_every: float = 30.0) -> pd.DataFrame:
        self._maybe_resume()
        total = self.r0.steps
        if self.step == 0 and not self.rows:
            self.evaluate()
        t0, last = time.time(), time.time()
        start_step = self.step
        while self.step < total:
            self.train_step()
            if self.step % self.r0.eval_every == 0 or self.step == total:
                self.evaluate()
            if self.checkpoint_every and self.step % self.checkpoint_every == 0 and self.step < total:
                self._save_checkpoint()
            if time.time() - last > progress_every:
                rate = (self.step - start_step) / (time.time() - t0)
                log.info("shard %s: step %d/%d, %.1f steps/s, %d/%d models alive",
                         self.shard.shard_id, self.step, total, rate,
                         int(self.alive.sum()), self.M)
                last = time.time()
        for i, s in enumerate(self.diverged_step):
            self.rows.append((i, s, "diverged_step", float(s)))
        return self.frame()

    # -- checkpoints ----------------------------------------------------------
    def _state(self) -> dict:
        return {"shard_id": self.shard.shard_id, "step": self.step,
                "params": [p.detach().cpu() for p in self.params],
                "opt": {"kind": self.opt.kind,
                        "state": [None if s is None else s.cpu() for s in self.opt.state]},
                "alive": self.alive.cpu(), "diverged_step": list(self.diverged_step),
                "loss_acc": self.loss_acc.cpu(), "loss_n": self.loss_n,
                "rows": [list(r) for r in self.rows]}

    def _save_checkpoint(self) -> None:
        if self.checkpoint is not None:
            _atomic_save(self._state(), self.checkpoint)
            log.info("shard %s: checkpoint at step %d", self.shard.shard_id, self.step)

    def _maybe_resume(self) -> None:
        if self.checkpoint is None or not Path(self.checkpoint).exists():
            return
        try:
            st = torch.load(self.checkpoint, map_location="cpu", weights_only=True)
        except Exception as e:
            log.warning("ignoring unreadable checkpoint %s (%s); starting over", self.checkpoint, e)
            return
        if st.get("shard_id") != self.shard.shard_id:
            log.warning("ignoring checkpoint %s of another shard", self.checkpoint)
            return
        with torch.no_grad():
            for p, q in zip(self.params, st["params"]):
                p.copy_(q.to(p.device, p.dtype))
        self.opt.load_state_dict({"kind": st["opt"]["kind"],
                                  "state": [None if s is None else s.to(self.device)
                                            for s in st["opt"]["state"]]})
        self.alive = st["alive"].to(self.device)
        self.diverged_step = list(st["diverged_step"])
        self.loss_acc = st["loss_acc"].to(self.device)
        self.loss_n = int(st["loss_n"])
        self.rows = [tuple(r) for r in st["rows"]]
        self.step = int(st["step"])
        log.info("shard %s: resumed from checkpoint at step %d", self.shard.shard_id, self.step)

    def frame(self) -> pd.DataFrame:
        """Long-format rows with each run's hyperparameters as columns."""
        idx, step, metric, value = zip(*self.rows) if self.rows else ((), (), (), ())
        df = pd.DataFrame({"model": np.asarray(idx, dtype=np.int64),
                           "step": np.asarray(step, dtype=np.int64),
                           "metric": pd.array(metric, dtype="string"),
                           "value": np.asarray(value, dtype=np.float64)})
        hp = pd.DataFrame([{"run_id": r.run_id, **r.as_dict()} for r in self.shard.runs])
        df = df.merge(hp, left_on="model", right_index=True).drop(columns="model")
        df.insert(0, "study", self.shard.study)
        df.insert(1, "shard_id", self.shard.shard_id)
        df["device"] = self.device.type
        df["tf32"] = False
        return df.sort_values(["run_id", "metric", "step"], kind="stable").reset_index(drop=True)
