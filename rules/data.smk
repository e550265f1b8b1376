# Data sets: embedded ones are generated, downloadable ones fetched (checksummed)
# and parsed from their raw format.  Facts (URL, sha256) live in sigprop.data.catalog.
# No conda: directive (the one lint `snakemake --lint` keeps for these two rules): every job
# runs in the workflow's own environment, the pinned requirements.lock the README installs, and
# the scripts only call the package installed there (tests/test_lint.py).


rule fetch_raw:
    output:
        ensure("results/raw/{dataset}/{filename}", sha256=raw_sha256),
    log:
        "results/logs/fetch/{dataset}/{filename}.log",
    cache: "omit-software"
    retries: 3
    localrule: True
    params:
        url=raw_url,
        sha256=raw_sha256,
        mirror=config["data"]["mirror"],
        local_dir=config["data"]["local_dir"],
    script:
        "../scripts/fetch_raw.py"


# Cached between workflows (`--cache`), so no benchmark: a cached result has no timing.
rule prepare_dataset:
    input:
        raw_files,
    output:
        "results/data/{dataset}.npz",
    log:
        "results/logs/data/{dataset}.log",
    cache: "omit-software"
    params:
        code=code_of("prepare"),
        options=lambda w: config["data"]["options"].get(w.dataset, {}),
        raw_dir=lambda w: f"results/raw/{w.dataset}",
        sha256_overrides=config["data"]["sha256_overrides"],
        sizes=lambda w: config["data"]["sizes"].get(w.dataset, {}),
    script:
        "../scripts/prepare_dataset.py"
