"""The subset of Prometheus alert templating the rule pack uses, rendered exactly as Prometheus renders it.

Supported actions: ``{{ $labels.name }}``, ``{{ $value }}``, ``{{ $value | humanize }}``,
``{{ $value | humanizePercentage }}``, ``{{ printf "%.2f" $value }}``, string literals, and the
``{{-``/``-}}`` whitespace trims. Anything else is reported when the pack is loaded, so a rule can never
render differently here than in Prometheus without a loud error.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from decimal import Decimal

_ACTION = re.compile(r"\{\{(-\s)?(.*?)(\s-)?\}\}", re.DOTALL)
_OPERAND = r'(?:\$value|\$labels\.[A-Za-z_][A-Za-z0-9_]*|"(?:[^"\\]|\\.)*")'
_PIPELINE = re.compile(rf"^({_OPERAND})((?:\s*\|\s*[A-Za-z]+)*)$")
_PRINTF = re.compile(rf'^printf\s+("(?:[^"\\]|\\.)*")\s+({_OPERAND})$')
_VERB = re.compile(r"%([-+ 0#]*)(\d*)(?:\.(\d+))?([fegsvd%])")
_FUNCTIONS = ("humanize", "humanizePercentage")


class TemplateError(ValueError):
    """A template uses a form this renderer does not reproduce."""


def template_problems(template: str) -> list[str]:
    """Why ``template`` cannot be rendered faithfully; empty when it can (no side effects)."""
    try:
        render(template, labels={}, value=0.0)
    except TemplateError as exc:
        return [str(exc)]
    return []


def render(template: str, *, labels: Mapping[str, str], value: float) -> str:
    """Expand ``template`` for one alert as Prometheus' text/template expansion does (no side effects)."""
    out: list[str] = []
    position = 0
    for match in _ACTION.finditer(template):
        literal = template[position : match.start()]
        out.append(literal.rstrip() if match.group(1) else literal)
        out.append(_action(match.group(2).strip(), labels=labels, value=value))
        position = match.end()
        if match.group(3):
            rest = template[position:]
            position += len(rest) - len(rest.lstrip())
    tail = template[position:]
    if "{{" in tail:
        raise TemplateError(f"unclosed action in {template!r}")
    out.append(tail)
    return "".join(out)


def _action(text: str, *, labels: Mapping[str, str], value: float) -> str:
    printf = _PRINTF.match(text)
    if printf is not None:
        return _printf(_unquote(printf.group(1)), _operand(printf.group(2), labels=labels, value=value))
    pipeline = _PIPELINE.match(text)
    if pipeline is None:
        raise TemplateError(f"unsupported template action {{{{ {text} }}}}")
    result: str | float = _operand(pipeline.group(1), labels=labels, value=value)
    for name in re.findall(r"[A-Za-z]+", pipeline.group(2)):
        if name not in _FUNCTIONS:
            raise TemplateError(f"unsupported template function {name!r} in {{{{ {text} }}}}")
        if not isinstance(result, float):
            raise TemplateError(f"{name} needs a number in {{{{ {text} }}}}")
        result = humanize(result) if name == "humanize" else humanize_percentage(result)
    return result if isinstance(result, str) else go_float(result)


def _operand(text: str, *, labels: Mapping[str, str], value: float) -> str | float:
    if text == "$value":
        return value
    if text.startswith("$labels."):
        # Prometheus expands with missingkey=zero: an absent label renders as the empty string.
        return labels.get(text.removeprefix("$labels."), "")
    return _unquote(text)


def _unquote(text: str) -> str:
    return re.sub(r"\\(.)", r"\1", text[1:-1])


def _printf(fmt: str, argument: str | float) -> str:
    verbs = [m for m in _VERB.finditer(fmt) if m.group(4) != "%"]
    if len(verbs) != 1:
        raise TemplateError(f"printf format {fmt!r} must hold exactly one verb")
    verb = verbs[0]
    kind = verb.group(4)
    if kind in "feg" and not isinstance(argument, float):
        raise TemplateError(f"printf {fmt!r} formats a number, got a label")
    if kind in "sv" and isinstance(argument, str):
        formatted = argument
    elif kind in "feg" and isinstance(argument, float):
        formatted = (
            _go_special(argument) or f"%{verb.group(1)}{verb.group(2)}.{verb.group(3) or 6}{kind}" % argument
        )
    else:
        raise TemplateError(f"printf verb %{kind} is not supported in {fmt!r}")
    return fmt[: verb.start()].replace("%%", "%") + formatted + fmt[verb.end() :].replace("%%", "%")


def _go_special(value: float) -> str | None:
    if math.isnan(value):
        return "NaN"
    if math.isinf(value):
        return "+Inf" if value > 0 else "-Inf"
    return None


def go_g4(value: float) -> str:
    """Go's ``%.4g``: four significant digits, exponent form beyond them."""
    return _go_special(value) or f"{value:.4g}"


def go_float(value: float) -> str:
    """Go's ``%v`` of a float64: shortest round-trip digits, exponent form when the decimal exponent is
    below -4 or at least 6 (strconv's rule for the shortest representation)."""
    special = _go_special(value)
    if special is not None:
        return special
    if value == 0:
        return "-0" if math.copysign(1.0, value) < 0 else "0"
    sign, digits, exponent = Decimal(repr(value)).normalize().as_tuple()
    assert isinstance(exponent, int)
    text = "".join(map(str, digits))
    point = len(text) + exponent  # position of the decimal point after the first len(text) digits
    magnitude = point - 1
    prefix = "-" if sign else ""
    if magnitude < -4 or magnitude >= 6:
        mantissa = text[0] + ("." + text[1:] if len(text) > 1 else "")
        return f"{prefix}{mantissa}e{'-' if magnitude < 0 else '+'}{abs(magnitude):02d}"
    if point <= 0:
        return f"{prefix}0.{'0' * -point}{text}"
    if point >= len(text):
        return f"{prefix}{text}{'0' * (point - len(text))}"
    return f"{prefix}{text[:point]}.{text[point:]}"


def humanize(value: float) -> str:
    """Prometheus' ``humanize``: SI prefixes with four significant digits."""
    if value == 0 or math.isnan(value) or math.isinf(value):
        return go_g4(value)
    prefix = ""
    if abs(value) >= 1:
        for candidate in ("k", "M", "G", "T", "P", "E", "Z", "Y"):
            if abs(value) < 1000:
                break
            prefix = candidate
            value /= 1000
        return go_g4(value) + prefix
    for candidate in ("m", "u", "n", "p", "f", "a", "z", "y"):
        if abs(value) >= 1:
            break
        prefix = candidate
        value *= 1000
    return go_g4(value) + prefix


def humanize_percentage(value: float) -> str:
    """Prometheus' ``humanizePercentage``: a ratio as a percentage with four significant digits."""
    return go_g4(value * 100) + "%"
