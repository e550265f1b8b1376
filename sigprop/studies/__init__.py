"""Study packages: one per study, found automatically by :mod:`sigprop.registry`.

``sigprop/studies/<kind>/__init__.py`` declares the study (``SPEC``: task, figures and
captions, tables, parameter types) and imports nothing heavy; its code lives in modules
beside it (the contract: :mod:`sigprop.contract`; how to add one: ``docs/adding-a-study.md``).
Study packages import the shared layers (data, nets, prune, train, measure, theory, figure and
claim helpers) and never each other, the registry or the workflow steps.
"""
