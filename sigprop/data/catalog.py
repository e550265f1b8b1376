"""Every dataset fact in one place: names, formats, shapes and pinned raw files.

Each downloadable file carries the SHA-256 digest it must have.  The digests
are copied from public manifests (cited next to each entry); none is
invented.  A file whose digest could not be found has ``sha256=""``: fetching
or preparing it is refused until the user pins a digest in the config
(``data.sha256_overrides: {filename: sha256}``, or ``{dataset/filename: sha256}`` where two
data sets share a file name, as MNIST and Fashion-MNIST do), see :func:`pinned_sha256`.

For the formats ``idx`` and ``gisette`` the ``files`` tuple is ordered
``(train inputs, train labels, test inputs, test labels)``.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

OVERRIDE_HINT = "data.sha256_overrides: {{{filename}: <sha256>}}"


@dataclass(frozen=True)
class RemoteFile:
    """One raw file: its local name, where it lives and the digest it must have."""

    filename: str
    url: str
    sha256: str
    size: int | None = None


@dataclass(frozen=True)
class DatasetSpec:
    """Static description of a dataset.

    ``source`` is ``"embedded"`` (generated or bundled, no files) or
    ``"download"``; ``input_shape`` is one sample's shape as stored
    (``(C, H, W)`` for images, ``(D,)`` for vectors); ``n_train``/``n_test``
    are the expected split sizes of the real data (``None``: not checked).
    """

    name: str
    source: str
    fmt: str
    files: tuple[RemoteFile, ...]
    n_classes: int | None
    input_shape: tuple[int, ...]
    task: str
    homepage: str = ""
    n_train: int | None = None
    n_test: int | None = None
    label: str = ""
    """How a reader knows the data set (summaries and the report's headline)."""


# MNIST: url, size and sha256 from tensorflow/datasets
# tensorflow_datasets/url_checksums/mnist.txt (CVDF mirror of LeCun's files).
_MNIST = "https://storage.googleapis.com/cvdf-datasets/mnist/"
_MNIST_FILES = (
    RemoteFile(
        "train-images-idx3-ubyte.gz",
        _MNIST + "train-images-idx3-ubyte.gz",
        "440fcabf73cc546fa21475e81ea370265605f56be210a4024d2ca8f203523609",
        9912422,
    ),
    RemoteFile(
        "train-labels-idx1-ubyte.gz",
        _MNIST + "train-labels-idx1-ubyte.gz",
        "3552534a0a558bbed6aed32b30c495cca23d567ec52cac8be1a0730e8010255c",
        28881,
    ),
    RemoteFile(
        "t10k-images-idx3-ubyte.gz",
        _MNIST + "t10k-images-idx3-ubyte.gz",
        "8d422c7b0a1c1c79245a5bcf07fe86e33eeafee792b84584aec276f5a2dbc4e6",
        1648877,
    ),
    RemoteFile(
        "t10k-labels-idx1-ubyte.gz",
        _MNIST + "t10k-labels-idx1-ubyte.gz",
        "f7ae60f92e00ec6debd23a6088c31dbd2371eca3ffa0defaefb259924204aec6",
        4542,
    ),
)

# Fashion-MNIST: from tensorflow/datasets tensorflow_datasets/url_checksums/fashion_mnist.txt.
_FASHION = "http://fashion-mnist.s3-website.eu-central-1.amazonaws.com/"
_FASHION_FILES = (
    RemoteFile(
        "train-images-idx3-ubyte.gz",
        _FASHION + "train-images-idx3-ubyte.gz",
        "3aede38d61863908ad78613f6a32ed271626dd12800ba2636569512369268a84",
        26421880,
    ),
    RemoteFile(
        "train-labels-idx1-ubyte.gz",
        _FASHION + "train-labels-idx1-ubyte.gz",
        "a04f17134ac03560a47e3764e11b92fc97de4d1bfaf8ba1a3aa29af54cc90845",
        29515,
    ),
    RemoteFile(
        "t10k-images-idx3-ubyte.gz",
        _FASHION + "t10k-images-idx3-ubyte.gz",
        "346e55b948d973a97e58d2351dde16a484bd415d4595297633bb08f03db6a073",
        4422102,
    ),
    RemoteFile(
        "t10k-labels-idx1-ubyte.gz",
        _FASHION + "t10k-labels-idx1-ubyte.gz",
        "67da17c76eaffca5446c3361aaab5c3cd6d1c2608764d35dfb1850b086bf8dd5",
        5148,
    ),
)

# EMNIST: size and sha256 from tensorflow/datasets url_checksums/emnist.txt, which
# lists the old www.itl.nist.gov address; NIST now serves the same archive from
# biometrics.nist.gov (several public projects pin this same digest for it).
_EMNIST_FILES = (
    RemoteFile(
        "gzip.zip",
        "https://biometrics.nist.gov/cs_links/EMNIST/gzip.zip",
        "fb9bb67e33772a9cc0b895e4ecf36d2cf35be8b709693c3564cea2a019fcda8e",
        561753746,
    ),
)

# CIFAR binary versions: tensorflow/datasets url_checksums/cifar10.txt and cifar100.txt.
_CIFAR10_FILES = (
    RemoteFile(
        "cifar-10-binary.tar.gz",
        "https://www.cs.toronto.edu/~kriz/cifar-10-binary.tar.gz",
        "c4a38c50a1bc5f3a1c5537f2155ab9d68f9f25eb1ed8d9ddda3db29a59bca1dd",
        170052171,
    ),
)
_CIFAR100_FILES = (
    RemoteFile(
        "cifar-100-binary.tar.gz",
        "https://www.cs.toronto.edu/~kriz/cifar-100-binary.tar.gz",
        "58a81ae192c23a4be8b1804d68e518ed807d710a4eb253b1f2a199162a40d8ec",
        168513733,
    ),
)

# Gisette (UCI): per-file sha256 from GruAna/PreprocessData.jl
# src/datasets/tabular/gisette.jl (DataDeps SHA-256 list), cross-checked against
# IntelPython/scikit-learn_bench sklbench/datasets/loaders.py (load_gisette).
_UCI = "https://archive.ics.uci.edu/ml/machine-learning-databases/gisette/"
_GISETTE_FILES = (
    RemoteFile(
        "gisette_train.data",
        _UCI + "GISETTE/gisette_train.data",
        "6d4c5e998afe67937b9e77a3334e03c85e545ebc65a6eb1333ffc14125cfc389",
    ),
    RemoteFile(
        "gisette_train.labels",
        _UCI + "GISETTE/gisette_train.labels",
        "42bd681fe51b161f033df773df14a0116e492676555ab14616c1b72edc054075",
    ),
    RemoteFile(
        "gisette_valid.data",
        _UCI + "GISETTE/gisette_valid.data",
        "5cea897956dd172a006132738254a27a8f61ecc1ceb6f5b20639c281d2942254",
    ),
    RemoteFile(
        "gisette_valid.labels",
        _UCI + "gisette_valid.labels",
        "a6b857a0448023f033c4dda2ef848714b4be2ae45ce598d088fb3efb406e08c5",
    ),
)

# Tiny ImageNet: no published SHA-256 was found (only the MD5
# 90528d7ca1a48142e341f4ef8d21d0de that torchvision-style loaders check), so
# the digest must be pinned by the user via data.sha256_overrides.
_TINY_FILES = (
    RemoteFile("tiny-imagenet-200.zip", "http://cs231n.stanford.edu/tiny-imagenet-200.zip", ""),
)


def _spec(*args, **kwargs) -> tuple[str, DatasetSpec]:
    spec = DatasetSpec(*args, **kwargs)
    return spec.name, spec


DATASETS: dict[str, DatasetSpec] = dict(
    [
        _spec(
            "digits",
            "embedded",
            "digits",
            (),
            10,
            (64,),
            "classification",
            "https://scikit-learn.org/stable/modules/generated/sklearn.datasets.load_digits.html",
            label="8×8 digits (scikit-learn)",
        ),
        _spec(
            "digits_images",
            "embedded",
            "digits_images",
            (),
            10,
            (1, 8, 8),
            "classification",
            "https://scikit-learn.org/stable/modules/generated/sklearn.datasets.load_digits.html",
            label="8×8 digit images (scikit-learn)",
        ),
        _spec(
            "synthetic_regression",
            "embedded",
            "synthetic_regression",
            (),
            None,
            (32,),
            "regression",
            label="synthetic linear-teacher regression",
        ),
        _spec(
            "gaussian",
            "embedded",
            "gaussian",
            (),
            None,
            (64,),
            "regression",
            label="Gaussian inputs",
        ),
        _spec(
            "mnist",
            "download",
            "idx",
            _MNIST_FILES,
            10,
            (1, 28, 28),
            "classification",
            "http://yann.lecun.com/exdb/mnist/",
            60000,
            10000,
            label="MNIST",
        ),
        _spec(
            "fashion_mnist",
            "download",
            "idx",
            _FASHION_FILES,
            10,
            (1, 28, 28),
            "classification",
            "https://github.com/zalandoresearch/fashion-mnist",
            60000,
            10000,
            label="Fashion-MNIST",
        ),
        _spec(
            "emnist_balanced",
            "download",
            "emnist",
            _EMNIST_FILES,
            47,
            (1, 28, 28),
            "classification",
            "https://www.nist.gov/itl/products-and-services/emnist-dataset",
            112800,
            18800,
            label="EMNIST Balanced",
        ),
        _spec(
            "cifar10",
            "download",
            "cifar10_bin",
            _CIFAR10_FILES,
            10,
            (3, 32, 32),
            "classification",
            "https://www.cs.toronto.edu/~kriz/cifar.html",
            50000,
            10000,
            label="CIFAR-10",
        ),
        _spec(
            "cifar100",
            "download",
            "cifar100_bin",
            _CIFAR100_FILES,
            100,
            (3, 32, 32),
            "classification",
            "https://www.cs.toronto.edu/~kriz/cifar.html",
            50000,
            10000,
            label="CIFAR-100",
        ),
        _spec(
            "gisette",
            "download",
            "gisette",
            _GISETTE_FILES,
            2,
            (5000,),
            "classification",
            "https://archive.ics.uci.edu/dataset/170/gisette",
            6000,
            1000,
            label="Gisette",
        ),
        _spec(
            "tiny_imagenet",
            "download",
            "tiny_imagenet",
            _TINY_FILES,
            200,
            (3, 64, 64),
            "classification",
            "https://www.kaggle.com/c/tiny-imagenet",
            100000,
            10000,
            label="Tiny ImageNet",
        ),
    ]
)


def get(name: str) -> DatasetSpec:
    """Return the spec for ``name``; an unknown name raises KeyError listing the known ones."""
    try:
        return DATASETS[name]
    except KeyError:
        raise KeyError(f"unknown dataset {name!r}; known datasets: {', '.join(names())}") from None


def label(name: str) -> str:
    """How a reader knows data set ``name`` (its ``label``, else the name)."""
    spec = DATASETS.get(name)
    return (spec.label or spec.name) if spec else name


def names(source: str | None = None) -> list[str]:
    """Sorted dataset names, optionally only those with the given ``source``."""
    if source not in (None, "embedded", "download"):
        raise ValueError(f"source must be 'embedded', 'download' or None, not {source!r}")
    return sorted(n for n, s in DATASETS.items() if source is None or s.source == source)


def pinned_sha256(
    remote: RemoteFile, overrides: Mapping[str, str] | None = None, dataset: str | None = None
) -> str:
    """The digest ``remote`` must have: the user's override if given, else the catalog's.

    An override keyed ``"<dataset>/<filename>"`` (when ``dataset`` is given) wins over one keyed
    by the bare file name.  May return ``""`` (nothing pinned); :func:`sigprop.data.fetch.fetch`
    and :func:`sigprop.data.fetch.verify` refuse such a file.
    """
    for key in ((f"{dataset}/{remote.filename}",) if dataset else ()) + (remote.filename,):
        if overrides and key in overrides:
            return str(overrides[key]).strip().lower()
    return remote.sha256
