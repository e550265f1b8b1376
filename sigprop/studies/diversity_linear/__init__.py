"""Gradient diversity and large-batch training of deep linear nets: Chen, Wang, Zhao,
Papailiopoulos & Koutris 2018, "The Effect of Network Width on the Performance of Large-batch
Training", arXiv:1806.03791, Fig. 2, Figs. 3(a)/4(a), Thms. 3 and 6 (and Thms. 1-2 as sanity rows).

Every run is one linear fully connected net (fc family, activation ``linear``, ``depth``
hidden layers of ``width`` units, one output, **no biases**: 004's nets are products of
matrices, Sec. 3) trained by mini-batch SGD on the embedded ``synthetic_regression`` data
set (N(0, 1) inputs labelled by a deep linear N(0, 1) teacher, 004 Sec. 5 / Table 1) with
the square loss, in float64.  The measure job of a shard trains its runs itself
(:func:`~sigprop.studies.diversity_linear.measure.train_group`), following 004 Sec. 5:

* learning rate: every candidate of ``measure.lrs`` is trained for ``measure.lr_epochs``
  (2) epochs from the run's initial weights; the one with the lowest training loss is kept;
* that model trains on until its training loss (mean squared error over the training set,
  evaluated after every epoch) reaches ``target_loss`` (1e-12, Table 1) or the epoch budget
  ``steps`` runs out; ``epochs_to_target`` is the first epoch at whose end the loss is at
  the target (NaN if never);
* gradient diversity Delta_S (004 Def. 1) of the whole training set is measured at
  initialization and every ``eval_every`` epochs while the loss is above the target
  ("every ten epochs ... and compute the average", Sec. 5), with the per-example gradient
  norms of :mod:`sigprop.studies.diversity_linear.per_example` (no per-example gradients materialized).

Minibatches: a fresh permutation per epoch from the run's key (:func:`sigprop.nets.rng.permutations`),
batches of ``batch_size`` (the last one smaller when ``batch_size`` does not divide n); the loss
of a step is the batch mean of the squared error.  Runs of one shard with equal batch size are
trained as one stacked model (runs x candidate learning rates).

Theory check at initialization (004 Thms. 3, 6; Appendix C): Thm. 6 assumes a student with
N(0, 1) weights, a teacher of the same widths with N(0, 1) weights and N(0, I) inputs.  Each run
also draws ``measure.init_draws`` such (student, teacher, data) triples of its net's widths and
of the training set's size n and dimension d (counter-based streams keyed by the run id), and
records ``sum_i ||grad f_i||^2`` and ``||sum_i grad f_i||^2`` of each; the ratio of their means
times n estimates the E-ratio ``rho`` of Thm. 3 / Eq. 4.1, compared with Thm. 6 (exact) and the
Thm. 3 lower bound (:mod:`sigprop.theory.diversity`).

Claims (declared in ``CLAIMS``, their statistics in
:mod:`~sigprop.studies.diversity_linear.claims`), by kind: ``thm6_expectation``
(Thm. 6 against the init draws) and the trained-net ordering / threshold rows are claims; sanity
rows, never tallied: ``thm3_bound_holds`` (Eq. 4.1 follows algebraically from Thm. 6), the
init-draw trends ``diversity_*[thm6]`` (the same draws as Thm. 6), ``thm1_two_layer_order`` (Thm. 1,
004 Sec. 3, on the depth-1 init draws: B_S = n Delta_S per draw) and ``thm2_two_layer_tanh_order``
(Thm. 2 on the theory job's Monte Carlo of 2-layer tanh nets, ``theory.thm2_*``): Thms. 1-2 are
Theta / Omega statements with unspecified constants, so no finite grid can refute them.

Run fields: ``steps`` is the epoch budget, ``eval_every`` the diversity period in epochs,
``target_loss`` the loss target, ``batch_size`` the SGD batch; ``lr`` is unused (the candidates
are ``measure.lrs``).  Rows (``step`` = epoch): ``train_loss`` and ``diversity`` of the
kept model; ``epochs_to_target``, ``lr``, ``diverged``; ``lr_candidate`` / ``lr_loss`` (``probe`` =
candidate); ``init_num`` / ``init_den`` (``probe`` = draw); ``n_train``, ``d_in``, ``seconds``.

Modules: ``measure`` (the training protocol and the Thm. 6 draws), ``theory`` (Thm. 6 / Thm. 3
tables), ``analysis`` (per-run, per-batch and per-net tables, the batch threshold),
``figures``, ``claims``.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import partial

from ...contract import Claim, Figure, StudySpec
from ...params import param

SOURCE = "004 Sec. 5, Fig. 2, Figs. 3(a)/4(a); Sec. 4, Thm. 3; App. C, Thm. 6"
SOURCE_FIG2 = "004 Sec. 5, Fig. 2"
SOURCE_THM = "004 Sec. 4, Thm. 3 (Eq. 4.1); App. C, Thm. 6"
SOURCE_THRESH = "004 Sec. 5 (findings 1-3), Figs. 3(a), 4(a)"

# each claim once: what the paper states, how it is tested, what a pass expects and what the row
# reports; {slots} are filled by claims.py.  An ordering ("rises with" / "falls with") has its
# test in the words of claims.group_rank or sigprop.claims.rank_claim ({test}: groups, attainable
# means, chance of a pass under a random order); {desc} is its tau per group, {no_tau} says when
# no tau is computable.
RISES, FALLS = "tau-b >= {tau_min:+g}", "tau-b <= -{tau_min:g}"
Ordering = partial(Claim, test="{test}", source=SOURCE_FIG2)
WINDOW = (
    "{no_tau}{desc}; diversity per run averaged over matched progress 0 to {progress:g} of the "
    "log-loss decrease to the target ({points} points interpolated between measurements), per "
    "net the mean over the runs that reach it: {runs}"
)
LARGEST = (
    "{no_tau}{desc}; no converging batch counts as 0; a group tied in the largest batch is left "
    "out; largest batch per net {nets}"
)
THM6_DRAWS = (
    "{no_tau}{desc}; {draws}+ draws per net; sanity: the same draws as thm6_expectation, and the "
    "Thm. 6 curve is monotone in width and depth, so the trend follows once Thm. 6 holds"
)
CLAIMS = {
    "diversity_rises_with_width": Ordering(
        statement="The gradient diversity during training rises with the width (Fig. 2(a))",
        expected=RISES,
        detail=WINDOW,
    ),
    "diversity_falls_with_depth": Ordering(
        statement="The gradient diversity during training falls with the depth (Fig. 2(a))",
        expected=FALLS,
        detail=WINDOW,
    ),
    "thm3_bound_holds": Claim(
        statement="The Thm. 3 (Eq. 4.1) lower bound holds for the E-ratio rho = "
        "E[n sum ||grad f_i||^2] / E[||sum grad f_i||^2] of every net",
        test="min over nets of (rho - bound) / SE >= -{k:g}",
        expected="rho >= bound (z >= -k)",
        detail="min over {nets} nets of (rho - bound)/SE at width {width}, depth {depth}: "
        "rho = {rho:.4g} ± {rho_se:.2g}, bound = {bound:.4g}; n = {n}, d = {d} (the bound is for "
        "n -> infinity; Thm. 6 at this n is {thm6:.4g}); bound/rho from {lo:.2f} to {hi:.2f}; "
        "sanity: Eq. 4.1 follows algebraically from Thm. 6 (checked by thm6_expectation) and "
        "the same draws",
        kind="sanity",
        source=SOURCE_THM,
    ),
    "thm6_expectation": Claim(
        statement="Thm. 6 gives the expected sums of squared per-example gradient norms and of "
        "inner products (their ratio at the data set's n) of linear nets at N(0,1) "
        "initialization",
        test="per net |rho - Thm. 6| <= {k:g} SE (delta method over independent draws; the "
        "nets' draws are independent), for >= {want:g} of the {nets} nets; detectable: relative "
        "offset of rho from Thm. 6 ({k:g} x the median SE/rho)",
        expected=">= {want:g} of nets with |rho - Thm. 6| <= {k:g} SE",
        detail="{nets} nets, {dmin}-{dmax} draws each; max |z| {max_z:.2f}; rho/Thm. 6 - 1 from "
        "{lo:+.3f} to {hi:+.3f} (median {med:+.3f}); SE/rho median {rel_se:.3f}",
        source=SOURCE_THM,
    ),
    "thm1_two_layer_order": Claim(
        statement="004 Thm. 1: for a 2-layer linear net, B_S = n Delta_S >= Theta(nKd) / "
        "Theta(Kn + dn + Kd) with constant probability",
        test="min over widths of q10(B_S) / order >= 0.5",
        expected="10% quantile of B_S / (nKd/(Kn+dn+Kd)) >= 0.5 at every width",
        detail="depth 1 (L = 2), n = {n}, d = {d}, draws per width {draws}; q10(B_S)/order per "
        "width: {ratios}; sanity: Thm. 1 hides its constants, so no finite grid can refute it; "
        "the band is that of tests/test_theory_diversity.py",
        kind="sanity",
        source="004 Sec. 3, Thm. 1",
    ),
    "thm2_two_layer_tanh_order": Claim(
        statement="004 Thm. 2: for a 2-layer net with an odd, bounded, monotone activation "
        "(tanh), E[n sum ||grad f_i||^2] / E[||sum grad f_i||^2] >= Omega(K d^2 / (K d + K + d))",
        test="min over widths of (rho + 3 SE) / order >= 0.5",
        expected="rho / order >= 0.5 at every width (within 3 SE)",
        detail="Monte Carlo (theory job): d = {d}, n = {n}, {draws} draws per width; rho (± SE) "
        "/ order per width: {ratios}; sanity: an Omega statement with unspecified constants; "
        "the band is that of tests/test_theory_diversity.py",
        kind="sanity",
        source="004 Sec. 3, Thm. 2",
    ),
    "largest_batch_rises_with_width": Ordering(
        statement="The largest batch size converging to the loss target within {budget:g} "
        "epochs rises with the width (Fig. 2(b))",
        expected=RISES,
        detail=LARGEST,
    ),
    "largest_batch_falls_with_depth": Ordering(
        statement="The largest batch size converging within {budget:g} epochs falls with the "
        "depth (Sec. 1: deeper nets are less amenable to large-batch training)",
        expected=FALLS,
        detail=LARGEST,
    ),
    "largest_batch_rises_with_diversity": Ordering(
        statement="The largest batch size converging within the budget grows with the gradient "
        "diversity (averaged over training; Fig. 2(c))",
        expected=RISES,
        detail="{no_tau}tau-b over {count} nets (no converging batch counts as 0); largest batch "
        "from {lo:g} to {hi:g}",
    ),
    "batch_threshold_exists": Claim(
        statement="For every net there is a batch-size threshold B*: up to B* the epochs to the "
        "target stay near their minimum, beyond it they grow",
        test="count: fraction of the {count} nets with a threshold (median epochs over seeds) "
        ">= {want:g}; resolution one net",
        expected=">= {want:g} of nets",
        detail="flat: epochs <= max({flat} e_min, e_min + 1); growth: epochs at the largest "
        "batch >= {growth} e_min; B* per net {nets}{missing}",
        source=SOURCE_THRESH,
    ),
    "threshold_rises_with_width": Ordering(
        statement="The batch threshold B* rises with the width",
        expected=RISES,
        detail="{no_tau}{desc}",
        source=SOURCE_THRESH,
    ),
    "threshold_falls_with_depth": Ordering(
        statement="The observed threshold B* becomes smaller when the network becomes deeper",
        expected=FALLS,
        detail="{no_tau}{desc}",
        source="004 Sec. 1 (contribution); Sec. 5, Fig. 3",
    ),
    "wider_fewer_epochs_at_large_batch": Ordering(
        statement="At the largest batch size ({batch}) wider nets need fewer epochs to the target",
        expected=FALLS,
        detail="{no_tau}{desc}; unconverged runs ranked as budget + 1 (a depth tied at the "
        "largest batch is left out)",
        source=SOURCE_THRESH,
    ),
}
# rows whose texts differ from their claim's: the diversity of the trained nets at their
# initialization ([init]) and the E-ratio of the Thm. 6 draws ([thm6], sanity rows)
VARIANTS = {
    "diversity_rises_with_width[init]": {
        "statement": "The gradient diversity of the trained nets at their initialization (fc "
        "init, the data set) rises with the width",
        "detail": "{no_tau}{desc}",
    },
    "diversity_falls_with_depth[init]": {
        "statement": "The gradient diversity of the trained nets at their initialization falls "
        "with the depth",
        "detail": "{no_tau}{desc}",
    },
    "diversity_rises_with_width[thm6]": {
        "statement": "At N(0,1) initialization (004's setting) the E-ratio (n x gradient "
        "diversity) rises with the width (004 Thm. 3 and its discussion)",
        "detail": THM6_DRAWS,
    },
    "diversity_falls_with_depth[thm6]": {
        "statement": "At N(0,1) initialization (004's setting) the E-ratio falls with the depth "
        "(004 Thm. 3 and its discussion)",
        "detail": THM6_DRAWS,
    },
    "largest_batch_rises_with_diversity[init]": {
        "statement": "The largest batch size converging within the budget grows with the "
        "gradient diversity (at initialization; Fig. 2(c))"
    },
}
# a "rises with width" row that repeats its "falls with depth" twin's measurement (one width per
# depth) is a sanity identity: these texts replace its test, expected and the head of its detail
TWIN = {
    "expected": "= -tau of {twin}",
    "test": "identity: the same measurement as {twin} (one width per depth)",
    "detail": "one width per depth (width falls as depth rises), so this ordering is the "
    "measurement of {twin} with the sign flipped: {tau:+.4g} against {twin_tau:+.4g}; ",
}
# appended to the detail of an ordering against the diversity that repeats a claim's ordering
COUNTED_TWICE = (
    "; |tau| equals that of {twin} (the same ordering of the same nets: the initial diversity is "
    "monotone in the depth here), so it corroborates that claim and is not counted"
)

# 2^-8 .. 1: the quick scale's grid
QUICK_LRS = (0.00390625, 0.0078125, 0.015625, 0.03125, 0.0625, 0.125, 0.25, 0.5, 1.0)


@dataclass(frozen=True)
class Measure:
    lrs: tuple[float, ...] = param(
        QUICK_LRS,
        gt=0,
        min_len=1,
        doc="candidate learning rates (step on the batch-mean squared error)",
    )
    lr_epochs: int = param(
        2,
        ge=1,
        doc="004 Sec. 5: the candidate with the lowest training loss "
        "after this many epochs is kept",
    )
    n_train: int | None = param(None, ge=1, doc="first n examples of the data set (default: all)")
    init_draws: int = param(16, ge=1, doc="Thm. 6 draws (student, teacher, data) per run")
    divergence_loss: float = param(
        1.0e6, gt=0, doc="a model whose training loss exceeds this is diverged (frozen)"
    )


@dataclass(frozen=True)
class Theory:
    d_in: int = param(32, ge=1, doc="input dimension of the data set (checked against the data)")
    width_max: int = param(
        128, ge=2, doc="Thm. 6 / Thm. 3 tabulated for equal hidden widths 2..width_max ..."
    )
    depth_max: int = param(4, ge=1, doc="... and 1..depth_max hidden layers")
    thm2_widths: tuple[int, ...] = param(
        (4, 16, 64),
        ge=1,
        min_len=1,
        doc="004 Thm. 2 Monte Carlo: hidden widths of the 2-layer tanh nets",
    )
    thm2_n: int = param(1024, ge=2, doc="004 Thm. 2 Monte Carlo: data points per draw")
    thm2_draws: int = param(200, ge=2, doc="004 Thm. 2 Monte Carlo: (net, teacher, data) draws")
    thm2_seed: int = param(0, ge=0, doc="004 Thm. 2 Monte Carlo: numpy seed")


@dataclass(frozen=True)
class Threshold:
    flat_factor: float = param(
        1.5,
        ge=1,
        doc="flat up to B*: epochs <= max(flat_factor e_min, e_min + 1) from the smallest batch",
    )
    growth_factor: float = param(
        2.0,
        ge=1,
        doc="grows beyond: epochs at the largest batch >= growth_factor e_min (or never reached)",
    )


@dataclass(frozen=True)
class DivWindow:
    progress: float = param(
        0.5,
        gt=0,
        le=1,
        doc="the window ends at this fraction of the "
        "log-loss decrease from the initial loss to the "
        "target",
    )
    points: int = param(
        5,
        ge=2,
        doc="evenly spaced progress values from 0 to the window's end "
        "at which each run's diversity is interpolated",
    )


@dataclass(frozen=True)
class Analysis:
    fig2_epochs: float = param(
        14.0, gt=0, doc="Fig. 2(b): largest batch converging within this many epochs"
    )
    div_window: DivWindow = param(
        DivWindow,
        doc="Fig. 2(a): diversity during training, averaged "
        "over a window of matched training progress",
    )
    threshold: Threshold = param(
        Threshold, doc="batch threshold B* (Sec. 5 finding 1), on median epochs per batch"
    )


@dataclass(frozen=True)
class Claims:
    tau_min: float = param(
        0.6,
        gt=0,
        le=1,
        doc="'rises with' / 'falls with': Kendall tau-b >= "
        "tau_min (<= -tau_min), mean over the groups",
    )
    z_max: float = param(3.0, gt=0, doc="Thm. 3/6 comparisons at initialization within z_max SE")
    within_fraction: float = param(
        0.9,
        gt=0,
        le=1,
        doc="Thm. 6 holds / a threshold exists for at least this fraction of the nets",
    )
    margin: float = param(
        0.1,
        gt=0,
        doc="Thm. 6 equivalence margin: a pass needs the test to "
        "detect a relative offset of the E-ratio this small",
    )


SPEC = StudySpec(
    task="measure",
    source=SOURCE,
    figures={
        "diversity_linear": Figure(
            "fig2",
            (
                "004 Fig. 2 on the synthetic regression set with linear FC nets (no biases, square loss, "
                "SGD with the paper's learning-rate protocol). (a) At initialization in 004's setting "
                "(N(0,1) student, N(0,1) teacher of the same widths, N(0,I) inputs, n and d of the "
                "training set): n times the ratio of the mean sum_i ||grad f_i||^2 to the mean "
                "||sum_i grad f_i||^2 over draws (points, ±1 SE) against width, one colour per depth "
                "(hidden layers); solid: the exact E-ratio of Thm. 6 at this n, dashed: the lower bound "
                "of Thm. 3 (Eq. 4.1, n -> infinity). (b) Gradient diversity Delta_S (Def. 1) of the "
                "trained nets on the training set during training, over the same window of progress "
                "for every net (the first half of the log-loss decrease from the initial loss to the "
                "target by default: log Delta_S interpolated between the measurements every few "
                "epochs at evenly spaced progress values and averaged; runs whose measurements do "
                "not reach the window's end are left out), mean ± 1 SE over runs; dotted: the same "
                "nets at initialization. (c) Largest batch size whose median run reaches training loss "
                "1e-12 within the epoch budget of Fig. 2(b) (the text gives 14 epochs), against width; "
                "(d) the same against the diversity of (b) (Fig. 2(c)). Crosses in (c) and points "
                "at the bottom edge of (d) (half the smallest batch): no batch size converged within the "
                "budget; in (c) the depths are offset vertically "
                "by a few percent so that equal values stay visible."
            ),
            claims=("thm*", "diversity_*", "largest_batch_*"),
        ),
        "diversity_epochs": Figure(
            "epochs_figure",
            (
                "004 Figs. 3(a)/4(a) analogue on the synthetic regression set: epochs for linear FC nets "
                "to reach training loss 1e-12 against batch size, median over seeds (error bars: "
                "min-max), one panel per depth, one line per width (learning rate tuned per net and "
                "batch size by the lowest training loss after 2 epochs). Open markers at the top: the "
                "epoch budget ran out before the target. Right: log10 of the median epochs as a "
                "heatmap over nets and batch sizes (Fig. 4(a)); hatched cells never converged."
            ),
            claims=("batch_threshold_exists", "threshold_*", "wider_*"),
        ),
    },
    measure=Measure,
    theory=Theory,
    analysis=Analysis,
    claims=Claims,
)
