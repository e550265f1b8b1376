"""Dataset layer: the catalog of dataset facts, checked downloads, raw parsers, prepared files.

``catalog`` holds every dataset fact (URLs, SHA-256 digests, shapes);
``fetch`` downloads or copies raw files and verifies their digests;
``formats`` parses the raw formats; ``embedded`` generates the sets that need
no download; ``prepare`` writes one normalised ``.npz`` per dataset and
``load`` reads it back.

Import from the submodules (``from sigprop.data.prepare import prepare``);
nothing is re-exported here, so submodule and function names never clash.
"""
