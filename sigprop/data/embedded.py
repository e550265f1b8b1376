"""Datasets that need no download: scikit-learn's digits and two generated sets.

Each generator is deterministic in its ``seed`` and returns
``(x_train, y_train, x_test, y_test)`` as numpy arrays.

Papers cited by prefix: 003 = Hayou, Ton, Doucet, Teh (2021), arXiv:2002.08797.
"""

from __future__ import annotations

import math

import numpy as np

# allowed values of the generators' options (config data.options; sigprop.config checks them
# when the DAG is built): (lowest, highest, whether the ends are allowed)
OPTION_RANGES = {
    "test_fraction": (0.0, 1.0, False),
    "seed": (0, None, True),
    "n": (1, None, True),
    "d": (1, None, True),
    "n_test": (0, None, True),
    "n_train": (1, None, True),
    "d_in": (1, None, True),
    "d_out": (1, None, True),
    "teacher_depth": (1, None, True),
    "teacher_width": (1, None, True),
    "noise": (0.0, None, True),
}


def digits(test_fraction: float = 0.25, seed: int = 0):
    """scikit-learn's bundled 8x8 digits (1797 samples, 64 features, 10 classes).

    Split into train/test stratified by class with ``seed``; features are
    the raw pixel intensities 0..16 as float32, labels int64.
    """
    from sklearn.datasets import load_digits
    from sklearn.model_selection import train_test_split

    if not 0.0 < test_fraction < 1.0:
        raise ValueError(f"test_fraction must lie in (0, 1), not {test_fraction}")
    x, y = load_digits(return_X_y=True)
    x_train, x_test, y_train, y_test = train_test_split(
        x, y, test_size=test_fraction, random_state=seed, stratify=y
    )
    return (
        x_train.astype(np.float32),
        y_train.astype(np.int64),
        x_test.astype(np.float32),
        y_test.astype(np.int64),
    )


def digits_images(test_fraction: float = 0.25, seed: int = 0):
    """:func:`digits` as ``(1, 8, 8)`` images, for the convolutional families.

    The same split and pixels as :func:`digits`, reshaped row-major to
    ``[N, 1, 8, 8]``: a CPU-cheap image set for quick-scale CNN / ResNet runs
    (003 Tables 1-2 at toy size; the paper uses CIFAR-10/100).
    """
    x_train, y_train, x_test, y_test = digits(test_fraction, seed)
    return x_train.reshape(-1, 1, 8, 8), y_train, x_test.reshape(-1, 1, 8, 8), y_test


def teacher_weights(d_in: int, d_out: int, depth: int, width: int, seed: int) -> list[np.ndarray]:
    """The deep linear teacher of :func:`synthetic_regression`: i.i.d. N(0, 1) matrices.

    ``depth`` matrices map ``d_in -> width -> ... -> width -> d_out``
    (``depth=1`` is a single ``d_in -> d_out`` map); each has shape
    ``(fan_out, fan_in)``.
    """
    if depth < 1 or min(d_in, d_out, width) < 1:
        raise ValueError("depth, d_in, d_out and width must all be >= 1")
    dims = [d_in] + [width] * (depth - 1) + [d_out]
    rng = np.random.default_rng(np.random.SeedSequence([seed, 0]))
    return [rng.standard_normal((dims[i + 1], dims[i])) for i in range(depth)]


def synthetic_regression(
    n_train: int = 8000,
    n_test: int = 2000,
    d_in: int = 32,
    d_out: int = 4,
    teacher_depth: int = 3,
    teacher_width: int = 32,
    noise: float = 0.0,
    seed: int = 0,
):
    """Regression data labelled by a random deep linear teacher (Chen et al., sec. 5).

    Inputs are i.i.d. N(0, 1); the teacher's weights are i.i.d. N(0, 1)
    (see :func:`teacher_weights`).  Its output is divided by the constant
    ``sqrt(d_in * teacher_width ** (teacher_depth - 1))`` -- the product of
    the fan-ins -- so every label has variance 1 in expectation over inputs
    and weights.  The constant is fixed in advance, so the labels stay
    exactly realisable by a deep linear network of the teacher's shape.
    ``noise`` adds N(0, noise^2) to each label.  The teacher, the train set
    and the test set use independent streams of ``seed``, so changing
    ``n_train`` does not change the teacher or the test set.  Returns float32
    x ``[N, d_in]`` and y ``[N, d_out]``.
    """
    if n_train < 1 or n_test < 0 or noise < 0:
        raise ValueError("need n_train >= 1, n_test >= 0 and noise >= 0")
    weights = teacher_weights(d_in, d_out, teacher_depth, teacher_width, seed)
    scale = 1.0 / math.sqrt(d_in * teacher_width ** (teacher_depth - 1))
    out = []
    for stream, n in ((1, n_train), (2, n_test)):
        rng = np.random.default_rng(np.random.SeedSequence([seed, stream]))
        x = rng.standard_normal((n, d_in))
        y = x
        for w in weights:
            y = y @ w.T
        y = y * scale + noise * rng.standard_normal((n, d_out))
        out += [x.astype(np.float32), y.astype(np.float32)]
    return tuple(out)


def gaussian(n: int = 256, d: int = 64, n_test: int = 0, seed: int = 0):
    """I.i.d. N(0, 1) inputs for measurements at initialisation.

    Returns x_train ``[n, d]``, zero labels, and a second independent draw
    of ``n_test`` rows as x_test (empty by default); x float32, y float32 zeros.
    """
    if n < 1 or d < 1 or n_test < 0:
        raise ValueError("need n >= 1, d >= 1 and n_test >= 0")
    rng = np.random.default_rng(seed)
    x_train = rng.standard_normal((n, d)).astype(np.float32)
    x_test = rng.standard_normal((n_test, d)).astype(np.float32)
    return x_train, np.zeros(n, np.float32), x_test, np.zeros(n_test, np.float32)
