"""`locklab run`'s options as an experiment: the locks named on the command line, each param
applied to the locks that have it (or to the one lock it names), plugin locks found in their
plugins."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any, NamedTuple

from locklab.errors import LocklabError
from locklab.model.catalogue import Catalogue
from locklab.model.spec import ExperimentSpec, Variant
from locklab.model.values import AXES, ParamValue, parse_int_list, parse_param, split_params

CatalogueOf = Callable[[tuple[str, ...]], Catalogue]  # the engine's locks, with these plugins


class SourceVariant(NamedTuple):
    """A kernel: lock compiled for one label: its plugin, patches and tree revision."""

    label: str
    plugin: str
    patches: tuple[str, ...] = ()
    revision: str = ""  # "COMMIT SUBJECT" of a --rev


def spec_for_locks(
    catalogue_of: CatalogueOf,
    lock_text: str | None,
    param_texts: list[str],
    plugin_paths: list[str],
    axes_text: dict[str, str | None],
    source_plugins: dict[str, list[SourceVariant]] | None = None,
    **settings: Any,
) -> ExperimentSpec:
    """The spec of `--lock A,B --param ... --nwriters ...`; `settings` are ExperimentSpec's
    other fields (name and baseline default to the locks). `source_plugins`: for each lock
    compiled from a kernel tree (kernel:NAME), its (patch label, plugin, patch files): one variant
    each, labelled by the patch alone when it is the only lock run, else LOCK/LABEL, so a column
    of the tree's code beside a port never reads as a bare label such as `stock`."""
    if not lock_text:
        raise LocklabError("run: give --lock A,B,... (or --resume EXP)")
    locks = [name.strip() for name in lock_text.split(",")]
    if not all(locks):
        raise LocklabError(f"--lock: empty lock name in '{lock_text}'")
    sources = source_plugins or {}
    plugins = tuple(str(Path(p).resolve()) for p in plugin_paths)
    catalogue = catalogue_of(plugins)
    unknown = next((name for name in locks if name not in catalogue and name not in sources), None)
    if unknown:
        raise LocklabError(f"unknown lock '{unknown}' (see 'locklab list')")
    built_here = [lock for lock in locks if lock not in sources]
    params = _targeted_params(catalogue, built_here, param_texts)
    plugin_of = _plugin_of(catalogue_of, plugins)
    variants: list[Variant] = []
    for lock in locks:
        if lock not in sources:
            variants.append(Variant(lock, lock, tuple(params[lock]), plugin_of.get(lock)))
            continue
        for source in sources[lock]:
            label = source.label
            shown = label if len(sources) == 1 and not built_here else f"{lock}/{label}"
            variants.append(Variant(shown, lock, (), source.plugin, source.patches,
                                    source.revision))  # fmt: skip
    sweep = {
        axis: parse_int_list(axis, text) for axis, text in axes_text.items() if text is not None
    }
    return ExperimentSpec(
        name=settings.pop("name", None) or "-".join(locks),
        variants=variants,
        sweep={axis: sweep[axis] for axis in AXES if axis in sweep},
        baseline=settings.pop("baseline", None) or variants[0].label,
        **settings,
    )


def _targeted_params(
    catalogue: Catalogue, locks: list[str], param_texts: list[str]
) -> dict[str, list[tuple[str, ParamValue]]]:
    """NAME=VALUE goes to every lock run that has that tunable, LOCK.NAME=VALUE to LOCK."""
    params: dict[str, list[tuple[str, ParamValue]]] = {name: [] for name in locks}
    for text in split_params(param_texts):
        scope, name, value = parse_param(text)
        targets = [scope] if scope else [lock for lock in locks if catalogue[lock].tunable(name)]
        if scope and scope not in params:
            raise LocklabError(f"--param {text}: '{scope}' is not one of the locks run")
        if not targets:
            raise LocklabError(f"--param {text}: none of the locks has a param '{name}'")
        for lock in targets:
            params[lock].append((name, value))
    return params


def _plugin_of(catalogue_of: CatalogueOf, plugins: tuple[str, ...]) -> dict[str, str]:
    """Which plugin each plugin lock comes from, so each run loads only what it needs."""
    built_in = set(catalogue_of(()))
    found: dict[str, str] = {}
    for plugin in plugins:
        for name in catalogue_of((plugin,)):
            if name not in built_in:
                found[name] = plugin
    return found
