"""Sizes of data sets and of the fully connected parts of networks, known without building
anything: the training-set size of a prepared data set, the input width of a network's fully
connected part, and the width that gives a fully connected net a fixed weight count (Chen et
al. 2018, "The effect of network width on the performance of large-batch training",
arXiv:1806.03791, Sec. 5)."""

from __future__ import annotations

import inspect
import math

import numpy as np

# images in sklearn's digits set (sklearn.datasets.load_digits), split by sigprop.data.embedded.digits
DIGITS_TOTAL = 1797


def fc_input_dim(arch: str, dataset: str, width: int) -> int:
    """Inputs of the fully connected part of ``arch`` on ``dataset`` (Chen et al. 2018, Sec. 5
    varies that part): fc, the flattened input; lenet, its 50 conv maps of ``((H-4)/2-4)/2``
    squared pixels (800 on MNIST); resnet18 / resnet34, the ``8 width`` pooled channels."""
    from . import catalog

    shape = catalog.get(dataset).input_shape
    if arch == "lenet":
        return 50 * (((shape[-1] - 4) // 2 - 4) // 2) ** 2
    if arch in ("resnet18", "resnet34"):
        return 8 * int(width)
    if arch == "fc":
        return int(np.prod(shape))
    raise ValueError(
        f"derived width: no fixed-parameter rule for arch '{arch}' (fc, lenet, resnet18, resnet34)"
    )


def width_for_params(p: float, depth: int, dataset: str, arch: str = "fc", width: int = 0) -> int:
    """Chen et al. 2018, Sec. 5: the width K with ``d_in K + (L-1) K^2 + K d_out = p`` (nearest integer);
    ``d_in`` from :func:`fc_input_dim`, ``d_out`` the data set's classes."""
    from . import catalog

    spec = catalog.get(dataset)
    d_in, d_out = fc_input_dim(arch, dataset, width), int(spec.n_classes or 1)
    a, b = depth - 1, d_in + d_out
    k = p / b if a == 0 else (-b + np.sqrt(b * b + 4 * a * p)) / (2 * a)
    if k < 1:
        raise ValueError(
            f"derived width: no width >= 1 gives {p:g} weights at depth {depth} on {dataset}"
        )
    return int(round(k))


def split_sizes(dataset: str, options: dict | None = None) -> tuple[int | None, int | None]:
    """``(n_train, n_test)`` of a prepared data set, known without building it (None where
    unknown): downloaded sets from the catalog; digits keeps ``ceil(1797 * test_fraction)``
    images for testing; the generated sets their ``n_train`` (or ``n``) and ``n_test``."""
    from . import catalog

    spec = catalog.get(dataset)
    if spec.source != "embedded":
        return spec.n_train, spec.n_test
    args = _embedded_args(spec, options)
    if args is None:
        return None, None
    if spec.fmt in ("digits", "digits_images"):
        n_test = math.ceil(float(args["test_fraction"]) * DIGITS_TOTAL)
        return DIGITS_TOTAL - n_test, n_test
    n_train = next((int(args[k]) for k in ("n_train", "n") if k in args), None)
    return n_train, int(args.get("n_test", 0))


def _embedded_args(spec, options: dict | None) -> dict | None:
    """The generator arguments of an embedded set: defaults, then ``options``."""
    from . import embedded

    gen = getattr(embedded, spec.fmt, None)
    if gen is None:
        return None
    args = {
        k: p.default
        for k, p in inspect.signature(gen).parameters.items()
        if p.default is not inspect.Parameter.empty
    }
    args.update(options or {})
    return args


def train_size(dataset: str, options: dict | None = None) -> int | None:
    """Training examples of a prepared data set, known without building it (None: unknown).

    Downloaded sets: the catalog's ``n_train``.  Embedded sets: from their generator's
    arguments (:mod:`sigprop.data.embedded`; ``options`` as in the config's ``data.options``
    over the defaults): digits keeps ``1797 - ceil(1797 * test_fraction)`` images for
    training (scikit-learn's ``train_test_split``), the generated sets ``n_train`` or ``n``.
    """
    return split_sizes(dataset, options)[0]
