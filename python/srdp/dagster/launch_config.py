"""Run config cannot change srdp's Dagster resources: the code location fixes them.

Dagster lets a run's config (the launchpad, a schedule's or sensor's ``RunRequest``, the
``dagster`` CLI's ``--config``, ``execute_in_process(run_config=...)``) set any field of a
``ConfigurableResource``, and a resource config in the run replaces every field the code set.
For srdp's resources (``SrdpIOManager``, ``SrdpResource``) those fields say which definition
file, which catalog, which writer and which credentials a run attaches with; whoever may launch
a run could otherwise point them at another srdp.toml (one without the rules) or other secrets.

So each resource compares, when Dagster sets it up for a run and before anything is attached,
the config the run resolved against the values its code location gave (``dg.EnvVar`` values
read from the environment of the process, as Dagster reads them). A run config that leaves the
resource out, or repeats the code location's values, runs; one that differs is refused with a
one-line error naming the field (the file paths shown, a secret's variable name only, never a
value). The srdp.toml path is compared as a file (``srdp.toml`` and its absolute path are one).
``configure_at_launch()`` leaves the fields to the run, so it is refused the same way.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from typing import Any

import dagster as dg
from pydantic_core import PydanticUndefined

from srdp.dagster.config_parameter import same_file

__all__ = ["LaunchConfigError", "refuse_launch_changes", "secret_variables"]

#: The two spellings of the srdp.toml path, compared as one field.
_PATH_FIELDS = ("config", "config_path")


class LaunchConfigError(ValueError):
    """A run's config changes a field of an srdp resource that its code location fixed."""


def refuse_launch_changes(resource: dg.ConfigurableResource, context: dg.InitResourceContext) -> None:
    """Raises :class:`LaunchConfigError` when ``resource``, as Dagster built it for the run from the
    run's config (being set up with ``context``), differs from what its code location gave, field
    by field: the srdp.toml path first (compared as a file), then the others in declaration order.
    What the run would use is compared, not the run config's text: a run config that names the
    resource without a field the code location gave leaves Dagster's default (or the code
    location's ``dg.EnvVar`` unread), and that is refused as a change too."""
    where = type(resource).__name__
    key = _resource_key(context)
    schema = context.resource_def.config_schema
    given = schema.default_value if schema.default_provided else {}
    given = given if isinstance(given, Mapping) else {}
    fixed = {**_field_defaults(type(resource)), **_resolved(given)}

    code_path = next((fixed.get(f) for f in _PATH_FIELDS if fixed.get(f) is not None), None)
    run_path = getattr(resource, "config", None)
    if run_path is not None and (code_path is None or not same_file(str(run_path), str(code_path))):
        code = f"the code location gave {str(code_path)!r}" if code_path is not None else "the code location gave none"
        raise LaunchConfigError(
            f"{where}: the run's config names the srdp.toml {str(run_path)!r}, but {code}; {_WHY} {_remedy(key)}"
        )
    for name, info in type(resource).model_fields.items():
        field = info.alias or name
        value = getattr(resource, name)
        if field in _PATH_FIELDS or _same(value, fixed.get(field)):
            continue
        detail = _secrets_detail(given, fixed.get(field), value) if field == "secrets" else ""
        raise LaunchConfigError(
            f"{where}: the run's config gives {field} another value than the code location{detail}; "
            f"{_WHY} {_remedy(key)}"
        )


_WHY = (
    "srdp's resources take their definition file, secrets and settings from the code location only "
    "(so that a run cannot point them at another srdp.toml or other credentials), and nothing was attached."
)


def _remedy(key: str | None) -> str:
    where = f"resources.{key}" if key else "the resource"
    return (
        f"Leave {where} out of the run config (or repeat every value the code location gave), and change "
        'the value in the code location instead (dg.EnvVar("...") reads it from the environment of the code '
        "location's process)"
    )


def _same(run: Any, code: Any) -> bool:
    """Whether the run's value is the code location's; a ``dg.EnvVar`` Dagster left unread in the
    run's value (a str of the variable's name) is never the code location's value."""
    if isinstance(run, dg.EnvVar):
        return False
    if isinstance(run, list) and isinstance(code, list):
        return len(run) == len(code) and all(_same(a, b) for a, b in zip(run, code))
    if isinstance(run, Mapping) and isinstance(code, Mapping):
        return run.keys() == code.keys() and all(_same(run[k], code[k]) for k in run)
    return bool(run == code)


def _secrets_detail(given: Any, fixed: Any, launched: Any) -> str:
    """Which ``secrets`` entry differs, named by its index and, when the code location gave it as
    ``dg.EnvVar``, by the variable; never a statement."""
    fixed_list = list(fixed) if isinstance(fixed, Sequence) and not isinstance(fixed, str) else []
    launched_list = list(launched) if isinstance(launched, Sequence) and not isinstance(launched, str) else []
    if len(fixed_list) != len(launched_list):
        return f" ({len(launched_list)} statement(s) for the run, {len(fixed_list)} in the code location)"
    index = next(i for i, (a, b) in enumerate(zip(fixed_list, launched_list)) if not _same(b, a))
    raw = given.get("secrets") if isinstance(given, Mapping) else None
    entry = raw[index] if isinstance(raw, Sequence) and not isinstance(raw, str) and index < len(raw) else None
    variable = entry.get("env") if isinstance(entry, Mapping) else None
    return f" (secrets[{index}]" + (f", dg.EnvVar({variable!r}) in the code location)" if variable else ")")


def secret_variables(context: dg.InitResourceContext) -> list[str | None]:
    """Per entry of the code location's ``secrets``, the environment variable it was given as
    (``dg.EnvVar``), or None for a literal: the name an error may show instead of the statement."""
    schema = context.resource_def.config_schema
    given = schema.default_value if schema.default_provided else {}
    entries = given.get("secrets") if isinstance(given, Mapping) else None
    if not isinstance(entries, list):
        return []
    return [e["env"] if isinstance(e, Mapping) and isinstance(e.get("env"), str) else None for e in entries]


def _resolved(value: Any) -> Any:
    """Dagster's config value with each ``{"env": NAME}`` (a ``dg.EnvVar``) read from the
    environment, as Dagster resolves it for the run (``None`` when unset)."""
    if isinstance(value, Mapping):
        if set(value) == {"env"} and isinstance(value["env"], str):
            return os.environ.get(value["env"])
        return {k: _resolved(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_resolved(v) for v in value]
    return value


def _field_defaults(cls: type[dg.ConfigurableResource]) -> dict[str, Any]:
    """Each config field's default, by the name run config uses (its alias, if any)."""
    out: dict[str, Any] = {}
    for name, info in cls.model_fields.items():
        default = info.get_default(call_default_factory=True)
        out[info.alias or name] = None if default is PydanticUndefined else default
    return out


def _resource_key(context: dg.InitResourceContext) -> str | None:
    """The key the resource is set up under (for the message), if Dagster says."""
    try:
        found = [k for k, d in context.all_resource_defs.items() if d is context.resource_def]
    except Exception:  # a context built without its definitions (build_init_resource_context)
        return None
    return found[0] if len(found) == 1 else None
