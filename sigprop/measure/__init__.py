"""Measurements that two or more studies use: the mean-field maps measured through a net
(:mod:`~sigprop.measure.maps`), per-layer gradient statistics (:mod:`~sigprop.measure.gradients`)
and their run tables (:mod:`~sigprop.measure.gradient_runs`).  A measurement that serves one
study lives in that study's package."""
