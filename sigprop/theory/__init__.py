"""Theory overlays: mean field of deep (dropout) networks and its Gaussian integrals.

* :mod:`sigprop.theory.quadrature`  -- Gaussian expectations (Gauss--Hermite and an
  adaptive uniform-grid rule), vectorized over arrays of variances/correlations.
* :mod:`sigprop.theory.activations` -- numpy activation registry and the expectations
  E[phi^2], E[phi'^2], E[phi phi], E[phi' phi'] (closed forms where known).
* :mod:`sigprop.theory.meanfield`   -- q/c maps, fixed points, chi_1, chi_2, depth
  scales and the edge of chaos of 000 (Huang et al. 2019, arXiv:1912.09132), Section 3.
"""
