"""The slurm profile end to end: an experiment of the tiny configuration submitted with ``snakemake
--profile workflow/profiles/slurm`` to a real single-node SLURM cluster on 127.0.0.1
(tests/slurm/_slurm_cluster.py), every job checked in ``sacct`` and the tables compared with a local run's;
and a dry run of the whole tiny configuration with the profile, which needs no SLURM.

The cluster needs Debian's slurm-wlm, slurmdbd, munge and mariadb-server and root (it serves munge on
/run/munge); ``.ci/run`` installs them. Elsewhere the test is skipped, except under CI=true, where a
missing program is a failure."""

import os
import re
import subprocess
import time

import pytest
import yaml
from _slurm_cluster import ACCOUNT, PARTITION, LoopbackCluster, alive, missing_programs
from _wf import REPO, TINY, new_workdir, smk

import mkclust.repro.resources as RES
from mkclust.repro.planning import plan

pytestmark = [pytest.mark.slurm, pytest.mark.workflow]
PROFILE = REPO / "workflow" / "profiles" / "slurm"


def profile_env(**extra):
    return {**os.environ, "MKCLUST_SLURM_PARTITION": PARTITION, "MKCLUST_SLURM_ACCOUNT": ACCOUNT, **extra}


def tiny_plan(wd):
    return plan(yaml.safe_load((wd / "config.yaml").read_text()))


def test_profile_declares_what_a_user_edits():
    prof = yaml.safe_load((PROFILE / "config.yaml").read_text())
    assert prof["executor"] == "slurm" and prof["retries"] >= 1
    assert {"slurm_partition", "slurm_account", "runtime", "mem_mb", "cpus_per_task"} <= set(prof["default-resources"])
    assert set(prof["set-resources"]) <= {"dataset", "kernel_bank", "run", "aggregate", "table", "figure"}
    local = yaml.safe_load((REPO / "workflow" / "profiles" / "local" / "config.yaml").read_text())
    assert "executor" not in local and local["cores"] >= 1


def parse_dry_run(text: str) -> list[dict]:
    """Each job of a dry run as {rule, wildcards, resources} from snakemake's job listing."""
    jobs = []
    for block in re.split(r"\n(?=(?:local)?rule \w+:)", text):
        m = re.match(r"(?:local)?rule (\w+):", block)
        res = re.search(r"\n\s+resources: (.*)", block)
        if not m or not res:
            continue
        wc = re.search(r"\n\s+wildcards: (.*)", block)
        jobs.append({
            "rule": m.group(1),
            "wildcards": dict(kv.split("=", 1) for kv in wc.group(1).split(", ")) if wc else {},
            "resources": dict(kv.split("=", 1) for kv in res.group(1).split(", ")),
        })
    return jobs


def sacct_jobs(cluster: LoopbackCluster, since: str) -> list[dict]:
    out = subprocess.run(["sacct", "-X", "-n", "-P", "-S", since, "--format=JobID,Comment,State,ReqMem,Timelimit"],
                         capture_output=True, text=True, env=cluster.env, check=True).stdout
    keys = ("id", "comment", "state", "reqmem", "timelimit")
    return [dict(zip(keys, line.split("|"))) for line in out.splitlines() if line.strip()]


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    missing = missing_programs()
    if missing or os.geteuid() != 0:
        why = f"missing {missing}" if missing else "needs root (munge on /run/munge, /etc/slurm)"
        if os.environ.get("CI"):
            pytest.fail(f"the SLURM test cannot run in CI: {why}; .ci/run installs its Debian packages")
        pytest.skip(f"no loopback SLURM cluster: {why}")
    c = LoopbackCluster(tmp_path_factory.mktemp("slurm"))
    c.start()
    yield c
    pids = [int(f.read_text()) for f in (c.root / "run").glob("*.pid")]
    c.stop()
    for pid in pids:  # exactly the daemons it started are gone
        assert not alive(pid)


#: the experiments submitted to the loopback cluster: one bank and 8 run groups of five estimators, every
#: kind of job the profile submits. A SLURM job took 12-25 s in sacct (other work beside it) whatever it
#: computed (the plugin starts snakemake twice a job: batch script, srun job step), so each job costs the
#: test's time: with tiny_gumkl too (a second bank, six GUMKL groups) it took 247 s in CI on 2026-12-07.
#: The dry run resolves all 40 groups.
SUBMITTED = ("tiny_rmkkm",)


def test_tiny_configuration_on_a_loopback_slurm_cluster(cluster, tmp_path_factory, request):
    """The shared tiny run (``tiny_local``), whose tables this run's must equal, is asked for once the
    submission is done: while another test worker builds it, the SLURM jobs (mostly waiting) run beside."""
    config = yaml.safe_load(TINY.read_text())
    config["experiments"] = {k: v for k, v in config["experiments"].items() if k in SUBMITTED}
    wd = new_workdir(tmp_path_factory, "slurm_run", config)
    since = time.strftime("%Y-%m-%dT%H:%M:%S", time.localtime(time.time() - 2))
    p = smk(wd, "--profile", str(PROFILE), "--slurm-init-seconds-before-status-checks", "1",
            "--seconds-between-status-checks", "2", cores=None,
            env=profile_env(SLURM_CONF=str(cluster.conf)), timeout=1800)
    assert "Rule: run" in p.stdout + p.stderr
    jobs = sacct_jobs(cluster, since)
    groups = tiny_plan(wd).run_groups()
    by_rule = {}
    for j in jobs:
        rule = re.match(r"rule_(run|kernel_bank)_", j["comment"])
        assert rule, f"a job of an unexpected rule was submitted: {j}"
        by_rule.setdefault(rule.group(1), []).append(j)
    # every run group and bank was one SLURM job, and each reached COMPLETED
    assert len(by_rule["run"]) == len(groups) == 8
    assert len(by_rule["kernel_bank"]) == 1
    assert {j["state"] for j in jobs} == {"COMPLETED"}, [j for j in jobs if j["state"] != "COMPLETED"]
    # the memory asked of SLURM is the estimate of the job's own inputs
    reqmem = sorted(int(j["reqmem"].rstrip("M")) for j in by_rule["run"])
    want = sorted(RES.run_mem_mb(g, wd / f"data/processed/{k[2]}.npz",
                                 None if k[3] == "none" else wd / f"data/kernels/{k[2]}/{k[3]}.npz")
                  for k, g in groups.items())
    assert reqmem == want
    # its tables equal those of the local run of the whole configuration, byte for byte
    local_tables = request.getfixturevalue("tiny_local")[1]
    names = sorted(str(f.relative_to(wd / "figures")) for f in (wd / "figures").rglob("*")
                   if f.suffix in (".csv", ".md", ".tex") and f.with_suffix(".tex").exists())   # verdicts hold timings
    assert names == [f"tinypaper/rmkkm_table.{ext}" for ext in ("csv", "md", "tex")]
    for name in names:
        assert (wd / "figures" / name).read_text() == (local_tables / name).read_text(), name


def test_dry_run_with_the_slurm_profile_resolves_every_jobs_resources(tmp_path_factory, tiny_local):
    """No SLURM needed. Datasets and banks are there first, as a user would build them (``--until
    kernel_bank``) before looking at what a submission asks for: a job's estimate reads its input files
    (unknown inputs show as <TBD>). They are the shared tiny run's, copied (building them here took 12
    jobs, about 45 s)."""
    import shutil

    wd = new_workdir(tmp_path_factory, "dry")
    for built in ("processed", "kernels"):
        shutil.copytree(tiny_local[0] / "data" / built, wd / "data" / built)
    built = smk(wd, "-n", "--until", "kernel_bank")
    assert parse_dry_run(built.stdout + built.stderr) == []   # nothing of theirs to build again
    p = smk(wd, "-n", "--profile", str(PROFILE), cores=None, env=profile_env())
    jobs = parse_dry_run(p.stdout + p.stderr)
    groups = tiny_plan(wd).run_groups()
    runs = [j for j in jobs if j["rule"] == "run"]
    assert len(runs) == len(groups) == 40
    for j in runs:
        r, w = j["resources"], j["wildcards"]
        group = groups[(w["experiment"], w["algorithm"], w["dataset"], w["bank"], w["param_id"])]
        inputs = wd / f"data/processed/{w['dataset']}.npz", wd / f"data/kernels/{w['dataset']}/{w['bank']}.npz"
        bank = inputs[1] if w["bank"] != "none" else None
        assert int(r["mem_mb"]) == RES.run_mem_mb(group, inputs[0], bank)
        assert int(r["runtime"]) == RES.run_runtime(group, inputs[0])
        assert r["slurm_partition"] == PARTITION and r["slurm_account"] == ACCOUNT
        assert int(r["cpus_per_task"]) == 1
    # every other rule resolved too (the estimates of aggregate/table/figure read files lazily)
    assert {j["rule"] for j in jobs} >= {"run", "aggregate", "table", "figure"}
    for j in jobs:
        assert "<TBD>" not in j["resources"].get("mem_mb", "") and "<TBD>" not in j["resources"].get("runtime", "")
    # the run jobs of the largest set ask for more memory than those of the smallest with the same bank
    mem = {(j["wildcards"]["dataset"], j["wildcards"]["algorithm"]): int(j["resources"]["mem_mb"]) for j in runs
           if j["wildcards"]["experiment"] == "tiny_timing"}
    assert mem[("ringnorm_400", "MKC")] > mem[("ringnorm_200", "MKC")]
