#!/usr/bin/env python3
"""Submit one Snakemake job script to (Sun/Son of/Open) Grid Engine; print its job id.

Called by snakemake-executor-plugin-cluster-generic as ``qsub.py JOBSCRIPT`` (the profile's
``cluster-generic-submit-cmd``).  The job's threads and resources are read from the
``# properties = {...}`` line that Snakemake writes into every job script, and mapped to:

    threads  > 1      -> -pe $SIGPROP_SGE_PE <threads>          (a $pe_slots PE, default smp)
    mem_mb            -> -l $SIGPROP_SGE_MEM=<mem_mb/threads>M  (per slot, default mem_free)
    runtime (minutes) -> -l h_rt=<seconds>
    gpu > 0           -> -l $SIGPROP_SGE_GPU=<gpu>              (a consumable, default gpu)
    sge_queue         -> -q <queue>       (or $SIGPROP_SGE_QUEUE for every job)
    sge_project       -> -P <project>     (or $SIGPROP_SGE_PROJECT)
    $SIGPROP_SGE_EXTRA   appended as is (split like a shell would), e.g. "-l scratch=10G"

Job output goes to results/logs/sge/<name>.o<jobid> (stdout and stderr joined).  Set
SIGPROP_SGE_DRYRUN=1 to print the qsub command line instead of running it.
Standard library only: it runs with whatever python3 is on PATH.
"""

from __future__ import annotations

import json
import math
import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

LOG_DIR = Path("results/logs/sge")


def job_properties(jobscript: str) -> dict:
    """The JSON on the job script's ``# properties = `` line (snakemake.utils.read_job_properties)."""
    for line in Path(jobscript).read_text().splitlines():
        m = re.match(r"# properties = (.*)", line)
        if m:
            return json.loads(m.group(1))
    raise SystemExit(f"qsub.py: no '# properties' line in {jobscript}")


def job_name(props: dict) -> str:
    """smk.<rule> or smk.<group>: Grid Engine names must not hold / : @ \\ * ? or spaces."""
    base = props.get("rule") if props.get("type") == "single" else props.get("groupid", "group")
    return "smk." + re.sub(r"[^A-Za-z0-9_.-]", "_", str(base or "job"))


def qsub_args(props: dict, env: dict) -> list[str]:
    """qsub options for one job (see the module docstring for the mapping)."""
    res = props.get("resources", {})
    threads = max(1, int(props.get("threads", 1)))
    args = [
        "-terse",
        "-cwd",
        "-V",
        "-S",
        "/bin/bash",
        "-j",
        "y",
        "-N",
        job_name(props),
        "-o",
        str(LOG_DIR),
    ]
    if threads > 1:
        args += ["-pe", env.get("SIGPROP_SGE_PE", "smp"), str(threads)]
    limits = []
    if res.get("mem_mb"):
        per_slot = math.ceil(float(res["mem_mb"]) / threads)
        limits.append(f"{env.get('SIGPROP_SGE_MEM', 'mem_free')}={per_slot}M")
    if res.get("runtime"):
        limits.append(f"h_rt={int(float(res['runtime']) * 60)}")
    if int(res.get("gpu", 0) or 0) > 0:
        limits.append(f"{env.get('SIGPROP_SGE_GPU', 'gpu')}={int(res['gpu'])}")
    if limits:
        args += ["-l", ",".join(limits)]
    queue = res.get("sge_queue") or env.get("SIGPROP_SGE_QUEUE")
    if queue:
        args += ["-q", str(queue)]
    project = res.get("sge_project") or env.get("SIGPROP_SGE_PROJECT")
    if project:
        args += ["-P", str(project)]
    return args + shlex.split(env.get("SIGPROP_SGE_EXTRA", ""))


def main(argv: list[str]) -> int:
    if len(argv) != 2:
        raise SystemExit("usage: qsub.py JOBSCRIPT")
    jobscript = argv[1]
    cmd = ["qsub", *qsub_args(job_properties(jobscript), dict(os.environ)), jobscript]
    if os.environ.get("SIGPROP_SGE_DRYRUN"):
        print(shlex.join(cmd))
        return 0
    LOG_DIR.mkdir(parents=True, exist_ok=True)
    out = subprocess.run(cmd, check=False, capture_output=True, text=True)
    if out.returncode != 0:
        sys.stderr.write(f"qsub failed ({out.returncode}): {shlex.join(cmd)}\n{out.stderr}")
        return out.returncode
    print(out.stdout.strip().split(".")[0])  # array jobs print 12.1-4:1; the id is 12
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
