"""Per-example gradient norms and gradient diversity (004 Def. 1): the efficient affine-layer
path (||delta_i||^2 ||a_i||^2) and the torch.func path against a naive loop of one autograd call
per model and example, in float64.

Tolerances: relative 1e-10 on every per-example, per-group squared norm and on the squared norm
of the summed gradient (float64 round-off is ~1e-15 relative; the values span up to ~1e8 for
the N(0, 1)-weight nets below).
"""

import itertools

import pytest
import torch

from sigprop.studies.diversity_linear import per_example as pe

DT = torch.float64
RTOL = 1e-10


def _net(depth, bias, k, m=2, d=5, width=4, seed=0, scale=1.0):
    gen = torch.Generator().manual_seed(seed)
    dims = [d] + [width] * depth + [k]
    params = []
    for a, b in itertools.pairwise(dims):
        params.append(scale * torch.randn(m, b, a, generator=gen, dtype=DT))
        if bias:
            params.append(torch.randn(m, 1, b, generator=gen, dtype=DT))
    return params


def _data(n, d, k, loss, seed=1, m=None):
    gen = torch.Generator().manual_seed(seed)
    lead = (n,) if m is None else (m, n)
    x = torch.randn(*lead, d, generator=gen, dtype=DT)
    y = (
        torch.randn(*lead, k, generator=gen, dtype=DT)
        if loss == "mse"
        else torch.randint(0, k, lead, generator=gen)
    )
    return x, y


def _close(a: pe.GradNorms, b: pe.GradNorms):
    torch.testing.assert_close(a.per_example, b.per_example, rtol=RTOL, atol=0)
    torch.testing.assert_close(a.sum_sq, b.sum_sq, rtol=RTOL, atol=0)
    torch.testing.assert_close(a.diversity(), b.diversity(), rtol=RTOL, atol=0)


CASES = list(itertools.product([1, 2, 3], [True, False], ["linear", "tanh"], ["mse", "ce"]))


@pytest.mark.parametrize("depth,bias,act,loss", CASES)
def test_efficient_and_func_paths_equal_naive_loop(depth, bias, act, loss):
    k = 3
    params = _net(depth, bias, k)
    x, y = _data(13, 5, k, loss)
    fn = pe.fc_loss_fn(act, loss, bias)
    naive = pe.naive_grad_norms(fn, params, x, y)
    eff = pe.fc_grad_norms(pe.fc_layers(params, bias), x, y, act, loss, chunk=4)
    func = pe.func_grad_norms(fn, params, x, y, chunk=5)
    assert eff.per_example.shape == (2, 13, len(params)) and eff.sum_sq.shape == (2, len(params))
    _close(eff, naive)
    _close(func, naive)
    # Def. 1 by hand from the naive totals
    d = naive.per_example.sum((1, 2)) / naive.sum_sq.sum(1)
    torch.testing.assert_close(eff.diversity(), d, rtol=RTOL, atol=0)
    assert (eff.diversity() > 0).all()


@pytest.mark.parametrize("chunk", [1, 3, 7, 13, 100])
def test_chunking_does_not_change_the_result(chunk):
    params = _net(2, True, 2, m=3)
    x, y = _data(13, 5, 2, "mse")
    ref = pe.fc_grad_norms(pe.fc_layers(params), x, y, "tanh", "mse", chunk=13)
    _close(pe.fc_grad_norms(pe.fc_layers(params), x, y, "tanh", "mse", chunk=chunk), ref)
    fn = pe.fc_loss_fn("tanh", "mse", True)
    _close(pe.func_grad_norms(fn, params, x, y, chunk=chunk), ref)


def test_per_model_data_equals_separate_calls():
    params = _net(2, False, 1, m=3)
    x, y = _data(11, 5, 1, "mse", m=3)
    both = pe.fc_grad_norms(pe.fc_layers(params, False), x, y, "linear", "mse", chunk=4)
    fn = pe.fc_loss_fn("linear", "mse", False)
    func = pe.func_grad_norms(fn, params, x, y, chunk=4, data_per_model=True)
    _close(func, both)
    for m in range(3):
        one = pe.fc_grad_norms(
            pe.fc_layers([p[m : m + 1] for p in params], False), x[m], y[m], "linear", "mse"
        )
        torch.testing.assert_close(both.per_example[m], one.per_example[0], rtol=RTOL, atol=0)
        torch.testing.assert_close(both.sum_sq[m], one.sum_sq[0], rtol=RTOL, atol=0)


def test_group_weights_give_the_diversity_of_the_reparametrized_net():
    """W_l = c_l U_l: the diversity in U (naive loop over the U-parametrized loss) is the
    diversity with group weights c_l^2."""
    params = _net(2, False, 1, m=2)
    x, y = _data(9, 5, 1, "mse")
    c = torch.tensor([0.3, 2.0, 0.7], dtype=DT)
    fn = pe.fc_loss_fn("linear", "mse", False)

    def fn_u(us, xi, yi):
        return fn(tuple(ci * u for ci, u in zip(c, us)), xi, yi)

    us = [p / ci for p, ci in zip(params, c)]
    naive_u = pe.naive_grad_norms(fn_u, us, x, y)
    eff = pe.fc_grad_norms(pe.fc_layers(params, False), x, y, "linear", "mse")
    torch.testing.assert_close(eff.diversity(c**2), naive_u.diversity(), rtol=RTOL, atol=0)
    assert not torch.allclose(eff.diversity(), naive_u.diversity(), rtol=1e-3)


def test_a_wrong_delta_rule_is_caught():
    """The comparison can fail: dropping the ||a_i||^2 factor of one layer changes the norms."""
    params = _net(1, True, 2)
    x, y = _data(7, 5, 2, "mse")
    eff = pe.fc_grad_norms(pe.fc_layers(params), x, y, "tanh", "mse")
    naive = pe.naive_grad_norms(pe.fc_loss_fn("tanh", "mse", True), params, x, y)
    bad = pe.GradNorms(eff.per_example.clone(), eff.sum_sq)
    bad.per_example[..., 2] /= (x**2).sum(-1)  # layer 2's weight group without ||a||^2
    with pytest.raises(AssertionError):
        _close(bad, naive)


def test_bad_shapes_raise():
    params = _net(1, True, 2)
    x, y = _data(5, 5, 2, "mse")
    with pytest.raises(ValueError, match="pairs"):
        pe.fc_layers(params[:-1])
    with pytest.raises(ValueError, match="bias"):
        pe.fc_grad_norms([(params[0], params[1][:, :, :2]), (params[2], params[3])], x, y)
    with pytest.raises(ValueError, match="dims"):
        pe.fc_grad_norms(pe.fc_layers(params), x[None, None], y)
    with pytest.raises(ValueError, match="unknown loss"):
        pe.fc_grad_norms(pe.fc_layers(params), x, y, loss="hinge")
