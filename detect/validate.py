"""The config checked before any work starts: each failure one line that names the key and says what to set.

    check_component(cls, settings, where="...")    # a node with _target_, against its class's types and ranges
    check_values(node, {"learning_rate": (float, POSITIVE)}, where="contaminate")   # keys of a catch-all node

(``detect.pipeline.check_detection`` checks a whole detection config with these; a study adds its own.)

Hydra composes any value a type allows; these are the values the code cannot use (a negative count, a learning
rate of -1, a fraction above 1, a string where a number goes, a setting the component does not have), found in
a second rather than after a model has loaded or trained. The types come from the component's own constructor
annotations and its ``ranges`` (a class attribute: setting -> ``Range``), so a component states its limits once,
where it is defined, and every config that builds it is checked against them.
"""

from __future__ import annotations

import inspect
import types
import typing
from dataclasses import dataclass

from detect.errors import InputError


@dataclass(frozen=True)
class Range:
    """``low`` < value < ``high`` (``closed`` ends: <=), either end open-ended with None; ``hint`` says why."""
    low: float | None = None
    high: float | None = None
    closed: str = "[]"   # "[]", "(]", "[)", "()": which ends are included
    hint: str = ""

    def holds(self, value) -> bool:
        if self.low is not None and (value < self.low if self.closed[0] == "[" else value <= self.low):
            return False
        return not (self.high is not None and (value > self.high if self.closed[1] == "]" else value >= self.high))

    def describe(self) -> str:
        """">= 1", "> 0", "in (0, 1]"."""
        if self.high is None:
            return f"{'>=' if self.closed[0] == '[' else '>'} {self.low:g}"
        if self.low is None:
            return f"{'<=' if self.closed[1] == ']' else '<'} {self.high:g}"
        return f"in {self.closed[0]}{self.low:g}, {self.high:g}{self.closed[1]}"


POSITIVE = Range(0, None, "()")
FRACTION = Range(0, 1, "()")
PROBABILITY = Range(0, 1, "[]")


def count(value, key: str, *, minimum: int = 1, hint: str = "") -> int:
    """``value`` as an integer of at least ``minimum``, or a one-line error naming ``key``."""
    if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
        raise InputError(f"{key}={value}: give a whole number >= {minimum}{hint}")
    return value


def check_value(value, key: str, annotation, limits: Range | None = None) -> None:
    """``value`` against a type annotation (int, float, str, bool, a union with None, list/dict) and a range; a
    setting with no annotation (a ``**settings`` catch-all) is checked against its range only."""
    untyped = annotation in (inspect.Parameter.empty, typing.Any)
    allowed = () if untyped else typing.get_args(annotation) if isinstance(annotation, types.UnionType) or \
        typing.get_origin(annotation) is typing.Union else (annotation,)
    if value is None:
        if untyped or type(None) in allowed:
            return
        raise InputError(f"{key}=null: give a value ({_name(annotation)})")
    kinds = [typing.get_origin(kind) or kind for kind in allowed if kind is not type(None)]
    checkable = kinds and all(isinstance(kind, type) and kind is not typing.Any for kind in kinds)
    if checkable and not any(_is(value, kind) for kind in kinds):
        raise InputError(f"{key}={value}: give {' or '.join(_name(k) for k in kinds)}"
                         f"{f' ({limits.hint})' if limits and limits.hint else ''}")
    if limits is not None and isinstance(value, (int, float)) and not isinstance(value, bool) \
            and not limits.holds(value):
        kind = _name(int if int in kinds and float not in kinds else float)
        raise InputError(f"{key}={value}: give {kind} {limits.describe()}{f' ({limits.hint})' if limits.hint else ''}")


def _is(value, kind: type) -> bool:
    if kind is float:
        return isinstance(value, (int, float)) and not isinstance(value, bool)
    if kind is int:
        return isinstance(value, int) and not isinstance(value, bool)
    if kind in (list, tuple):
        return isinstance(value, (list, tuple)) or hasattr(value, "__iter__") and not isinstance(value, (str, dict))
    if kind is dict:
        return hasattr(value, "items")
    return isinstance(value, kind)


def _name(kind) -> str:
    return {int: "a whole number", float: "a number", str: "a string", bool: "true or false", list: "a list",
            dict: "a mapping"}.get(kind, getattr(kind, "__name__", str(kind)))


def resolve_target(target: str, where: str):
    """The class or function a ``_target_`` names; a misnamed one is one line."""
    import importlib

    parts = target.split(".")
    for cut in range(len(parts) - 1, 0, -1):  # the longest importable module, then attributes (Class.method)
        module = ".".join(parts[:cut])
        try:
            found = importlib.import_module(module)
        except ModuleNotFoundError as error:
            if error.name and not module.startswith(error.name):  # the module exists; something it imports does not
                raise InputError(f"{where}._target_={target}: importing {module} failed ({error}); install what "
                                 f"it needs") from None
            continue
        try:
            for name in parts[cut:]:
                found = getattr(found, name)
            return found
        except AttributeError:
            break
    raise InputError(f"{where}._target_={target}: no such class or function; check the module path and name")


def check_component(target, settings: dict, *, where: str, ignore: tuple[str, ...] = ("enabled",)) -> None:
    """``settings`` against ``target``'s constructor: no setting it lacks, each of its annotated type and, where
    the target declares one in ``ranges``, in range."""
    function = target.__init__ if inspect.isclass(target) else target
    parameters = inspect.signature(function).parameters
    if any(p.kind is inspect.Parameter.VAR_KEYWORD for p in parameters.values()):
        known = None  # takes any keyword: only the annotated ones are checked
    else:
        known = [name for name in parameters if name != "self"]
    try:
        hints = typing.get_type_hints(function)
    except (NameError, TypeError):
        hints = {}
    ranges = getattr(target, "ranges", {})
    for key, value in settings.items():
        if key.startswith("_") or key in ignore:
            continue
        if known is not None and key not in known:
            raise InputError(f"{where}.{key} is not a setting of {getattr(target, '__name__', target)}; its "
                             f"settings: {', '.join(k for k in known if k not in ignore)}")
        check_value(value, f"{where}.{key}", hints.get(key, inspect.Parameter.empty), ranges.get(key))


def check_node(settings: dict, *, where: str, example: str, what: str | None = None,
                ignore: tuple[str, ...] = ("enabled",)) -> dict:
    """A config node that builds a component (``settings``, a plain mapping): its ``_target_`` named (``example``:
    one to suggest) and resolvable, each setting one of its class's, of its type and in its range. Returns the
    settings, ready to instantiate; ``what`` names the node in the message (default: ``where``)."""
    if not settings.get("_target_"):
        raise InputError(f"{what or where} has no _target_; name its class, e.g. _target_: {example}")
    check_component(resolve_target(settings["_target_"], where), settings, where=where, ignore=ignore)
    return settings


def check_values(node, limits: dict[str, tuple[type, Range | None]], *, where: str) -> None:
    """Dotted keys of ``node`` (a config mapping) against (type, range) limits; an absent or null key is skipped."""
    for dotted, (kind, limits_of) in limits.items():
        value = node
        for part in dotted.split("."):
            value = value.get(part) if hasattr(value, "get") else None
        if value is not None:
            check_value(value, f"{where}.{dotted}", kind, limits_of)
