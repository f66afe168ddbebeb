"""Configurations built from protocols: each paper's protocol written once, run at any size.

A *protocol* (``workflow/protocols/<paper>.yaml``, under ``protocols:``) is an experiment as its
paper runs it: data sets, kernel banks, seeds, algorithms with their grids, tables, claims and
figures. A configuration's experiment that names one (``protocol: NAME``) starts from it and
overrides it key by key (:func:`overlay`):

- a mapping merges into the protocol's mapping, key by key, recursively;
- a list or a value replaces the protocol's;
- ``null`` deletes the key: a configuration leaves out an algorithm, a table, a column, a figure.

An experiment set to ``null`` (an overlay's ``experiments: {odmc_table2: null}``) is left out.

So the default configuration (``config.yaml``) and the paper configuration
(``workflow/configs/paper.yaml``) state only what they change: data sets, seeds, grid sizes, and
what the smaller run leaves out. A protocol file may also declare ``kernel_banks``: they join the
configuration's (the configuration's own entries override theirs, merged the same way).

Two shorthands, expanded here: ``seeds: {range: n}`` is the seeds ``0 .. n-1``; a data set an
experiment names without declaring it under ``datasets:`` is loaded by the registered loader of
that name with its defaults (:func:`mkclust.repro.planning.plan`). And a table ranked over many
papers' sets (``ranks: {by_paper: true}``, the benchmark's) gets each paper's sets written into its
``ranks`` from the protocols' data set lists (:func:`_with_paper_sets`).

A protocol's ``datasets`` are its paper's own data sets: the resolved experiment keeps them as
``paper_datasets`` (unless the configuration gives its own), so that a verdict can say which of the
data sets a configuration runs are the paper's and which are stand-ins for them.

Snakemake merges several ``--configfile`` files key by key before the Snakefile calls
:func:`resolve`, so an overlay file (``workflow/configs/paper_results.yaml``) adds its overrides to
the experiment's own, and both apply on top of the protocol.
"""

from __future__ import annotations

import copy
from pathlib import Path

import yaml

from mkclust.repro.errors import ConfigError

#: where a checkout keeps its protocols, relative to its root (the Snakefile passes its own)
PROTOCOL_FOLDER = Path("workflow") / "protocols"
#: the configuration schema, in the same checkout
SCHEMA_FILE = Path("workflow") / "schemas" / "config.schema.yaml"


#: mappings whose key order is what they mean (a table's or a figure's column order; the verdict
#: lists a paper's claims and tables in the order of its experiments and their tables; a ranked
#: table's papers in the order of their first data set, :func:`_with_paper_sets`); every other
#: mapping of a configuration means the same in any key order
ORDERED = frozenset({"columns", "levels", "totals", "time", "tables", "experiments", "paper_sets"})


def canonical(value, ordered: bool = False):
    """``value`` with every mapping's keys sorted, except the mappings under :data:`ORDERED` keys
    (their values canonical too): what the rules get as params, so that rewriting a configuration
    with its keys in another order changes no job."""
    if isinstance(value, dict):
        items = value.items() if ordered else sorted(value.items(), key=lambda kv: str(kv[0]))
        return {k: canonical(v, ordered=k in ORDERED) for k, v in items}
    if isinstance(value, list):
        return [canonical(v) for v in value]
    return value


def read_yaml(path: str | Path) -> dict:
    """A configuration or protocol file; a YAML error names the file, the line and the column (and a
    file that is not a mapping says so)."""
    try:
        doc = yaml.safe_load(Path(path).read_text())
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f"line {mark.line + 1}, column {mark.column + 1}: " if mark is not None else ""
        what = " ".join(str(x) for x in (getattr(exc, "context", None), getattr(exc, "problem", None)) if x)
        raise ConfigError(f"{path}: not valid YAML: {where}{what or exc}") from None
    if doc is None:
        return {}
    if not isinstance(doc, dict):
        raise ConfigError(f"{path}: a configuration is a mapping of keys (data_dir:, experiments:, ...), got a "
                          f"{type(doc).__name__}")
    return doc


def overlay(base, change):
    """``change`` applied on ``base`` (neither is modified): mappings merge recursively (the base's
    key order first, new keys after), ``None`` deletes a key, anything else replaces."""
    if not (isinstance(base, dict) and isinstance(change, dict)):
        return copy.deepcopy(change)
    out = {k: copy.deepcopy(v) for k, v in base.items()}
    for k, v in change.items():
        if v is None:
            out.pop(k, None)
        else:
            out[k] = overlay(out.get(k), v)
    return out


#: the top-level sections of a protocol file
PROTOCOL_SECTIONS = ("papers", "datasets", "protocols", "kernel_banks")


def read_protocol_files(folder: str | Path) -> dict[str, dict]:
    """Every section of :data:`PROTOCOL_SECTIONS` declared in ``folder``'s YAML files, merged:
    section -> name -> body. ``papers``: a paper's ``name`` in reports, its ``headline`` table (the
    README's results lead with it) and ``citation``; ``datasets``: the loader options of the data
    sets the protocols name (as a configuration's ``datasets:``). A name declared twice is an error (naming both
    files); so is any other section."""
    out: dict[str, dict] = {kind: {} for kind in PROTOCOL_SECTIONS}
    where: dict = {}
    for path in sorted(Path(folder).glob("*.yaml")):
        doc = read_yaml(path)
        unknown = sorted(set(doc) - set(PROTOCOL_SECTIONS))
        if unknown:
            raise ConfigError(f"{path.name}: unknown top-level key(s) {unknown}; a protocol file has "
                              + ", ".join(PROTOCOL_SECTIONS))
        for kind in PROTOCOL_SECTIONS:
            for name, body in (doc.get(kind) or {}).items():
                if (kind, name) in where:
                    raise ConfigError(f"{kind}.{name} is declared in both {where[kind, name]} and {path.name}")
                where[kind, name] = path.name
                out[kind][name] = body
    return out


def read_protocols(folder: str | Path) -> tuple[dict, dict]:
    """Every protocol and kernel bank declared in ``folder``'s YAML files: ``(protocols, banks)``
    (:func:`read_protocol_files`)."""
    files = read_protocol_files(folder)
    return files["protocols"], files["kernel_banks"]


def _seeds(value, where: str):
    if isinstance(value, dict):
        if set(value) != {"range"} or isinstance(value["range"], bool) or not isinstance(value["range"], int) \
                or value["range"] < 1:
            raise ConfigError(f"{where}: seeds are a list of integers or {{range: n}} (n >= 1), got {value!r}")
        return list(range(value["range"]))
    return value


#: top-level switches a person sets with ``--config key=value``: booleans, and paths that may be null
SWITCHES = {"archive_partial": bool, "results_archive": "path", "reference_run": "path", "data_mirror": "path",
            "own_data": "path"}


def command_line_values(config: dict) -> dict:
    """``config`` with the top-level switches of :data:`SWITCHES` given as words on the command line
    read as YAML would read them: Snakemake's ``--config`` reads only ``True``/``False`` as booleans
    and keeps ``true``, ``false``, ``null`` and ``none`` as strings. An unreadable boolean is an error
    naming the key."""
    out = dict(config)
    for key, kind in SWITCHES.items():
        v = out.get(key)
        if not isinstance(v, str):
            continue
        word = v.strip().lower()
        if kind is bool:
            if word in ("true", "yes", "on", "1"):
                out[key] = True
            elif word in ("false", "no", "off", "0", ""):
                out[key] = False
            else:
                raise ConfigError(f"{key}: {v!r} is not true or false")
        elif word in ("null", "none", "~", ""):
            out[key] = None
    return out


def _check_shape(config: dict) -> None:
    """The keys :func:`resolve` reads before the schema is checked, each a mapping (a ConfigError naming
    the key otherwise: the schema's own message would come only after a crash here)."""
    for key in ("experiments", "datasets", "kernel_banks", "papers", "own_data_options"):
        value = config.get(key)
        if value is not None and not isinstance(value, dict):
            raise ConfigError(f"{key}: a mapping of names to settings, got {type(value).__name__} {value!r:.60}")
    for name, e in (config.get("experiments") or {}).items():
        if e is not None and not isinstance(e, dict):
            raise ConfigError(f"experiments.{name}: a mapping (paper:, datasets:, algorithms:, ...), "
                              f"got {type(e).__name__} {e!r:.60}")


def resolve(config: dict, folder: str | Path) -> dict:
    """The configuration with every ``protocol:`` experiment expanded, the papers of the protocol
    files (``papers:``, the configuration's own entries over them) and the seed ranges written
    out: what the schema validates and :func:`mkclust.repro.planning.plan` plans. ``config`` itself is
    not modified."""
    _check_shape(config)
    config = _own_data(config)
    experiments = config.get("experiments") or {}
    wanted = any(isinstance(e, dict) and "protocol" in e for e in experiments.values())
    files = read_protocol_files(folder)
    protocols, banks = (files["protocols"], files["kernel_banks"]) if wanted else ({}, {})
    out = dict(config)
    if banks:
        out["kernel_banks"] = overlay(banks, config.get("kernel_banks") or {})
    if wanted and files["datasets"]:   # the data sets the protocols declare, the configuration's over them
        out["datasets"] = overlay(files["datasets"], config.get("datasets") or {})
    if files["papers"] or config.get("papers"):   # every paper's name and headline table, the configuration's last
        out["papers"] = overlay(files["papers"], config.get("papers") or {})
    resolved = {}
    for name, e in experiments.items():
        if e is None:   # an overlay's ``name: null`` leaves the experiment out
            continue
        if isinstance(e, dict) and "protocol" in e:
            e = dict(e)
            which = e.pop("protocol")
            if which not in protocols:
                raise ConfigError(f"experiments.{name}.protocol: unknown protocol {which!r}; known: "
                                  f"{', '.join(sorted(protocols))}")
            narrowed = e.get("datasets")
            e = overlay(protocols[which], e)
            if narrowed is not None:   # the configuration runs fewer sets: the protocol's lists follow it
                e = _narrowed(e, protocols[which], list(narrowed))
            # the protocol's data sets are the paper's own; any other the configuration runs is a
            # stand-in (the verdict says which is which)
            e.setdefault("paper_datasets", list(protocols[which].get("datasets") or []))
        if isinstance(e, dict):
            e = dict(e)
            if "seeds" in e:
                e["seeds"] = _seeds(e["seeds"], f"experiments.{name}.seeds")
            if isinstance(e.get("algorithms"), dict):
                e["algorithms"] = dict(e["algorithms"])
                for label, a in e["algorithms"].items():
                    if isinstance(a, dict) and "seeds" in a:
                        e["algorithms"][label] = {**a, "seeds": _seeds(a["seeds"], f"experiments.{name}."
                                                                         f"algorithms.{label}.seeds")}
        resolved[name] = _with_paper_sets(e, files["protocols"], out.get("papers") or {})
    if "experiments" in config:
        out["experiments"] = resolved
    return out


def _with_paper_sets(e, protocols: dict, papers: dict):
    """``e`` with ``ranks.paper_sets`` added to each table whose ``ranks`` ask ``by_paper: true``:
    per paper of the protocol files (other than ``e``'s own), by its ``name``, the data sets of ``e``
    that its protocols run (in ``e``'s order, the papers in the order of their first set there; a paper
    none of whose sets ``e`` runs is left out). The
    protocols' ``datasets`` lists are the one place that says which paper a data set comes from; a
    table ranked over many papers' sets (the benchmark) reports its ranks per paper from them."""
    tables = e.get("tables") if isinstance(e, dict) else None
    ranked = [t for t, spec in (tables.items() if isinstance(tables, dict) else ())
              if isinstance(spec, dict) and (spec.get("ranks") or {}).get("by_paper")]
    if not ranked:
        return e
    own: dict[str, set] = {}
    for p in protocols.values():
        if p.get("paper") != e.get("paper"):
            own.setdefault(p.get("paper"), set()).update(p.get("datasets") or [])
    runs = list(e.get("datasets") or [])
    sets = [((papers.get(paper) or {}).get("name", paper), [d for d in runs if d in names])
            for paper, names in own.items()]
    # the papers in the order their first data set comes in e's list
    sets = dict(sorted(((n, ds) for n, ds in sets if ds), key=lambda nd: (runs.index(nd[1][0]), str(nd[0]))))
    e = {**e, "tables": dict(tables)}
    for t in ranked:
        e["tables"][t] = {**tables[t], "ranks": {**tables[t]["ranks"], "paper_sets": sets}}
    return e


def _narrowed(e: dict, protocol: dict, datasets: list[str]) -> dict:
    """A protocol experiment ``e`` whose configuration runs only ``datasets``: each data set list the
    protocol gives an algorithm, a table or a figure keeps only those (in its order); an algorithm,
    table or figure left with none is dropped. Lists the configuration itself gives stay as given."""
    keep = set(datasets)

    def narrow(section: str) -> None:
        own = protocol.get(section) or {}
        out = {}
        for name, spec in (e.get(section) or {}).items():
            theirs = (own.get(name) or {}).get("datasets") if isinstance(own.get(name), dict) else None
            if isinstance(spec, dict) and theirs is not None and spec.get("datasets") == theirs:
                sets = [d for d in theirs if d in keep]
                if not sets:
                    continue
                spec = {**spec, "datasets": sets}
            out[name] = spec
        e[section] = out

    before = set(e.get("algorithms") or {})
    for section in ("algorithms", "tables", "figures"):
        if section in e:
            narrow(section)
    dropped = before - set(e.get("algorithms") or {})
    for section in ("tables", "figures"):   # the columns and lines of an algorithm dropped above go with it
        for name, spec in list((e.get(section) or {}).items()):
            if not isinstance(spec, dict) or not dropped:
                continue
            if isinstance(spec.get("columns"), dict):
                spec = {**spec, "columns": {c: col for c, col in spec["columns"].items()
                                            if not set(as_list(col.get("algorithm", c))) & dropped}}
            if isinstance(spec.get("algorithm"), list):
                spec = {**spec, "algorithm": [a for a in spec["algorithm"] if a not in dropped]}
            e[section][name] = spec
    return e


#: the data set name ``own_data`` gets in a configuration (workflow/configs/own_data.yaml)
OWN_DATA = "own"


def _own_data(config: dict) -> dict:
    """``own_data: PATH`` (``--config own_data=PATH``) as a local-file data set with
    ``own_data_options``, named after the file (``my data/wine.csv`` -> ``wine``) in place of
    :data:`OWN_DATA` in every experiment; a configuration whose experiments use :data:`OWN_DATA`
    without a path is an error that says how to give it."""
    import re

    path = config.get("own_data")
    uses = any(isinstance(e, dict) and OWN_DATA in (e.get("datasets") or [])
               for e in (config.get("experiments") or {}).values())
    if not path:
        if uses and OWN_DATA not in (config.get("datasets") or {}):
            raise ConfigError("own_data: name your data file: snakemake --configfile workflow/configs/own_data.yaml "
                              "--config own_data=PATH")
        return config
    name = re.sub(r"[^A-Za-z0-9_.+-]+", "_", Path(str(path)).stem).lstrip(".-") or OWN_DATA
    out = dict(config)
    out["datasets"] = {**(config.get("datasets") or {}),
                       name: {"file": str(path), **(config.get("own_data_options") or {})}}

    def renamed(sets):
        return [name if d == OWN_DATA else d for d in sets]

    experiments = {}
    for exp, e in (config.get("experiments") or {}).items():
        if isinstance(e, dict) and OWN_DATA in (e.get("datasets") or []):
            e = {**e, "datasets": renamed(e["datasets"])}
            if isinstance(e.get("algorithms"), dict):
                e["algorithms"] = {k: ({**a, "datasets": renamed(a["datasets"])} if isinstance(a, dict) and
                                       "datasets" in a else a) for k, a in e["algorithms"].items()}
        experiments[exp] = e
    if "experiments" in config:
        out["experiments"] = experiments
    return out


def load(*paths: str | Path, folder: str | Path | None = None) -> dict:
    """Read configuration files as ``snakemake --configfile a b ...`` does (each merged key by key
    into the ones before) and resolve them: the configuration the workflow plans. The protocols are
    ``folder``, else the :data:`PROTOCOL_FOLDER` of the checkout the first file is in, else that of
    the working directory."""
    from snakemake.utils import update_config

    merged: dict = {}
    for path in paths:
        update_config(merged, read_yaml(path))
    if folder is None:
        folder = protocol_folder(paths[0])
    return resolve(merged, folder)


def _workflow_file(relative: Path, near: str | Path) -> Path:
    """``relative`` (a path under a checkout's ``workflow/``) in the checkout that holds ``near``, else
    in the working directory's, else as installed with the package (``mkclust/repro/<name>``: a
    wheel ships the protocols and the schema); a ConfigError if none has it."""
    first = Path(near).resolve()
    for d in (*first.parents, Path.cwd()):
        if (d / relative).exists():
            return d / relative
    from importlib import resources
    installed = Path(str(resources.files("mkclust.repro"))) / relative.relative_to("workflow")
    if installed.exists():
        return installed
    raise ConfigError(f"no {relative} above {near}, in the working directory or installed with mkclust: "
                      "reinstall the package, or give the protocols' folder")


def protocol_folder(near: str | Path) -> Path:
    """The protocols (:data:`PROTOCOL_FOLDER`) for a configuration file ``near``: its checkout's, the
    working directory's, or those installed with the package (:func:`_workflow_file`)."""
    return _workflow_file(PROTOCOL_FOLDER, near)


def schema_file(near: str | Path) -> Path:
    """The configuration schema (:data:`SCHEMA_FILE`) found as :func:`protocol_folder` finds the
    protocols."""
    return _workflow_file(SCHEMA_FILE, near)


def schema_errors(config: dict, schema_path: str | Path, limit: int = 3) -> list[str]:
    """The configuration's schema violations, one short line each (``experiments.x.algorithms.KKM:
    Additional properties are not allowed ('paramz' was unexpected)``), at most ``limit``: what the
    Snakefile reports instead of jsonschema's page-long dump of the schema and the instance."""
    import jsonschema

    schema = yaml.safe_load(Path(schema_path).read_text())
    errors = sorted(jsonschema.Draft202012Validator(schema).iter_errors(config),
                    key=lambda e: list(map(str, e.absolute_path)))
    lines = []
    for err in errors[:limit]:
        msg = err.message if len(err.message) <= 200 else err.message[:200] + " ..."
        lines.append(f"{'.'.join(map(str, err.absolute_path)) or '(top level)'}: {msg}")
    if len(errors) > limit:
        lines.append(f"and {len(errors) - limit} more")
    return lines


def as_list(value) -> list:
    """A configuration value that may be one item or a list of items (an algorithm label, for
    instance), as a list."""
    return list(value) if isinstance(value, (list, tuple)) else [value]


#: the kinds of a paper's claim (:mod:`mkclust.repro.reporting.verdicts`), told apart by their keys
CLAIM_KINDS = ("above", "close", "wins", "slope", "below", "sweep")


def claim_kind(claim: dict) -> str:
    """The kind of a claim: the one key of :data:`CLAIM_KINDS` it has (a ``sweep`` claim also has
    ``above``: the levels it is compared with)."""
    kinds = [k for k in CLAIM_KINDS if k in claim and not (k == "above" and "sweep" in claim)]
    if len(kinds) != 1:
        raise ValueError(f"claim {claim.get('claim')!r}: give exactly one of {', '.join(CLAIM_KINDS)} "
                         f"(found {', '.join(kinds) or 'none'})")
    return kinds[0]
