"""Convolutional families (the CNN zoo of 003 and 004), M models batched by grouped convolution.

Every architecture is one ``body(ops, x, run, n_out)`` function over the
operations of :mod:`sigprop.nets.stacked`; the same function builds the
stacked parameters (shape pass) and runs the M models (data pass).  Inputs are
images ``[M, B, C, H, W]``.  All nets use ``run.activation`` (set ``relu``
for the papers' settings), conv / linear weights ``N(0, sigma_w2/fan_in)``
(He init is ``sigma_w2 = 2``), biases ``N(0, sigma_b2)``; convs followed by
BatchNorm have no bias.  BatchNorm statistics are per model (train: batch
statistics, running statistics returned as updated buffers; eval: running
statistics).  Dropout is not supported (``keep_rate`` must be 1).

Architectures (``RunSpec.arch``)
--------------------------------
``resnet18``, ``resnet34``
    CIFAR ResNet-18/34 (He et al. 2016, BasicBlocks ``[2,2,2,2]`` /
    ``[3,4,6,3]``, 3x3 stride-1 stem without max-pool as in the usual CIFAR
    port, stage widths ``width * (1, 2, 4, 8)``, 1x1 conv + BN shortcut when the
    shape changes, global average pool).  ``width = 64`` is the standard net
    (11.2M / 21.3M parameters on CIFAR-10, 004 Table 1: 11m / 21m).  004 also
    varies the fully connected part: ``head_depth`` hidden layers of
    ``head_width`` units before the readout (default 0: linear readout).
``resnet32``, ``resnet50``, ``resnet104`` and ``stable_resnet32/50/104``
    CIFAR ResNets with ``6n+2`` layers (n = 5, 8, 17 BasicBlocks per stage, so
    15 / 24 / 51 blocks), stage widths ``width * (1, 2, 4)``.  003 Sec. 4.2
    ("as in Wang et al. 2020, we doubled the number of filters") and the
    authors' code (``sAviOr287/imagenet_ICLR``) use widths [32, 64, 128]: set
    ``width = 32`` (16 gives He et al.'s original nets).  Stable ResNet (003
    Prop. 2, Eq. 9; authors' code): the residual branch ``bn2(conv2(.))`` is
    multiplied by ``1/sqrt(L)`` with ``L`` the number of blocks (ResNet32: 15);
    the shortcut is not scaled.
``vgg16``, ``vgg16x3``
    VGG16 with BatchNorm for CIFAR (003 Table 5; Frankle et al. 2020 / open_lth
    ``cifar_vgg_16``): blocks of 3x3 convs ``[2, 2, 3, 3, 3]`` with widths
    ``width * (1, 2, 4, 8, 8)``, 2x2 max-pool after each of the first four
    blocks, global average pool, linear readout.  ``vgg16x3`` is 003's
    3xVGG16: "the same number of pooling layers as VGG16, and 3 times the
    number of convolutional layers inside each vanilla block" (3x the convs,
    not 3x the channels).  ``width = 64`` is standard.  Padding is zero
    padding (the authors' code uses circular padding; not reproduced).
``vcnn``
    003 Table 4 vanilla CNN: ``depth`` 3x3 conv layers (stride 1, zero padding
    1) of ``width`` channels with biases and ``activation``, no pooling and no
    BatchNorm, then global average pool and a linear readout.
``lenet``
    004's LeNet (Table 1: MNIST, 431k parameters = the Caffe/Keras LeNet:
    conv 20@5x5 - maxpool 2 - conv 50@5x5 - maxpool 2 - fc 500 - fc 10, with
    ``activation`` after each conv and hidden fc).  004 varies the fully
    connected part at fixed parameter count, so here it is ``depth`` hidden
    layers of ``width`` units; ``depth = 1, width = 500`` on 28x28 inputs is
    the 431,080-parameter original.

Papers cited by prefix: 003 = Hayou, Ton, Doucet, Teh (2021), arXiv:2002.08797; 004 = Chen,
Wang, Zhao, Papailiopoulos, Koutris (2018), arXiv:1806.03791.
"""

from __future__ import annotations

import math

from . import stacked

# --------------------------------------------------------------------- bodies


def _basic_block(ops, x, run, c_in, c_out, stride, branch_scale):
    act = run.activation
    out = ops.conv(x, c_out, 3, stride, 1)
    out = ops.act(ops.bn(out), act)
    out = ops.bn(ops.conv(out, c_out, 3, 1, 1))
    if branch_scale != 1.0:
        out = ops.scale(out, branch_scale)
    if stride != 1 or c_in != c_out:
        sc = ops.bn(ops.conv(x, c_out, 1, stride, 0))
    else:
        sc = x
    return ops.act(ops.add(out, sc), act)


def _head(ops, h, run, n_out):
    for _ in range(int(getattr(run, "head_depth", 0))):
        h = ops.act(ops.linear(h, int(getattr(run, "head_width", 0) or run.width)), run.activation)
    return ops.linear(h, n_out)


def resnet_body(blocks, stable=False, stem_relu=True):
    n_blocks = sum(blocks)
    scale = 1.0 / math.sqrt(n_blocks) if stable else 1.0

    def body(ops, x, run, n_out):
        base = int(run.width)
        h = ops.act(ops.bn(ops.conv(x, base, 3, 1, 1)), run.activation)
        c = base
        for i, nb in enumerate(blocks):
            c_out = base * 2**i
            for j in range(nb):
                stride = 2 if (i > 0 and j == 0) else 1
                h = _basic_block(ops, h, run, c, c_out, stride, scale)
                c = c_out
        return _head(ops, ops.gap(h), run, n_out)

    return body


VGG16_BLOCKS = (2, 2, 3, 3, 3)
VGG_MULT = (1, 2, 4, 8, 8)


def vgg_body(conv_mult=1):
    def body(ops, x, run, n_out):
        h = x
        for i, (nc, mult) in enumerate(zip(VGG16_BLOCKS, VGG_MULT)):
            for _ in range(nc * conv_mult):
                h = ops.act(ops.bn(ops.conv(h, int(run.width) * mult, 3, 1, 1)), run.activation)
            if i < len(VGG16_BLOCKS) - 1:
                h = ops.maxpool(h, 2)
        return ops.linear(ops.gap(h), n_out)

    return body


def vcnn_body(ops, x, run, n_out):
    h = x
    for _ in range(int(run.depth)):
        h = ops.act(ops.conv(h, int(run.width), 3, 1, 1, bias=True), run.activation)
    return ops.linear(ops.gap(h), n_out)


def lenet_body(ops, x, run, n_out):
    act = run.activation
    h = ops.maxpool(ops.act(ops.conv(x, 20, 5, 1, 0, bias=True), act), 2)
    h = ops.maxpool(ops.act(ops.conv(h, 50, 5, 1, 0, bias=True), act), 2)
    h = ops.flatten(h)
    for _ in range(int(run.depth)):
        h = ops.act(ops.linear(h, int(run.width)), act)
    return ops.linear(h, n_out)


# -------------------------------------------------------------------- family


class ConvFamily:
    """A family from a ``body``: grouped-conv batching over the model axis."""

    def __init__(self, name, body):
        self.name = name
        self.body = body

    def init(self, runs, keys, in_shape, n_out, device, dtype):
        if len(in_shape) != 3:
            raise ValueError(
                f"{self.name} needs image inputs (C, H, W), got in_shape {tuple(in_shape)}"
            )
        sw, sb = stacked.sigma(runs)
        ops = stacked.Init(keys, sw, sb, device, dtype)
        self.body(ops, tuple(int(s) for s in in_shape), runs[0], int(n_out))
        return ops.params, ops.buffers

    def apply(self, runs, params, buffers, x, train, keys, step):
        if train and any(r.keep_rate < 1 for r in runs):
            raise NotImplementedError(f"{self.name}: dropout (keep_rate < 1) is not supported")
        ops = stacked.Apply(params, buffers, x.shape[0], train)
        out = self.body(ops, stacked.images_in(x), runs[0], None)
        return out, ops.new_buffers

    def constrain(self, runs, params, buffers):
        return None


RESNET_BLOCKS = {
    "resnet18": (2, 2, 2, 2),
    "resnet34": (3, 4, 6, 3),
    "resnet32": (5, 5, 5),
    "resnet50": (8, 8, 8),
    "resnet104": (17, 17, 17),
}


def families() -> dict:
    out = {}
    for name, blocks in RESNET_BLOCKS.items():
        out[name] = ConvFamily(name, resnet_body(blocks))
        if len(blocks) == 3:
            out["stable_" + name] = ConvFamily("stable_" + name, resnet_body(blocks, stable=True))
    out["vgg16"] = ConvFamily("vgg16", vgg_body(1))
    out["vgg16x3"] = ConvFamily("vgg16x3", vgg_body(3))
    out["vcnn"] = ConvFamily("vcnn", vcnn_body)
    out["lenet"] = ConvFamily("lenet", lenet_body)
    return out
