"""A call's arguments that its tool's or prompt's schema refuses, in words an agent acts on.

The SDK answers a tool call whose arguments fail validation with pydantic's report ("1 validation
error for symbol_historyArguments ... For further information visit https://errors.pydantic.dev
..."), and a prompt without a required argument with an internal error and a traceback. Here each
problem is one line that names the argument, what it must be (read from the tool's input schema,
which the agent was given too) and what it was.
"""

from __future__ import annotations

import json

from pydantic import ValidationError

from cortex_core.text.sanitize import terminal

SHOWN = 60      # characters of a refused value quoted back


def problems(error: ValidationError, arguments: dict, schema: dict) -> list[str]:
    """One line per argument refused: `top_k` must be an integer from 1 to 100; got 0."""
    properties = schema.get("properties", {})
    lines: list[str] = []
    seen: set[str] = set()
    for item in error.errors(include_url=False):
        name = str(item["loc"][0]) if item["loc"] else ""
        if name in seen:      # a list's items: one line for the argument
            continue
        seen.add(name)
        lines.append(_problem(name, item, arguments, properties.get(name)))
    return lines


def _problem(name: str, item, arguments: dict, schema: dict | None) -> str:
    if schema is None:     # not one of the schema's arguments: pydantic's words, one line
        return (f"`{name}`: " if name else "") + terminal(item["msg"])
    wanted = expected(schema)
    if item["type"] == "missing":
        return f"`{name}` is required: {wanted}"
    return f"`{name}` must be {wanted}; got {shown(arguments.get(name))}"


def expected(schema: dict) -> str:
    """What a JSON schema accepts, in words: "an integer from 1 to 500"."""
    if "anyOf" in schema:     # null stands for the default: not worth a word
        return " or ".join(expected(s) for s in schema["anyOf"] if s.get("type") != "null")
    if "enum" in schema:
        return "one of " + ", ".join(f"`{value}`" for value in schema["enum"])
    kind = schema.get("type")
    if kind == "string":
        return _string(schema)
    if kind in ("integer", "number"):
        return ("an integer" if kind == "integer" else "a number") + _range(schema)
    if kind == "boolean":
        return "true or false"
    if kind == "array":
        most = f" of at most {schema['maxItems']} items" if "maxItems" in schema else ""
        items = f", each {expected(schema['items'])}" if "items" in schema else ""
        return f"a list{most}{items}"
    return "what the tool's input schema says"


def _string(schema: dict) -> str:
    least, most = schema.get("minLength", 0), schema.get("maxLength")
    text = "a non-empty string" if least == 1 else "a string"
    if least > 1:
        text += f" of at least {least} characters" + (f" and at most {most}" if most else "")
    elif most is not None:
        text += f" of at most {most} characters"
    return text


def _range(schema: dict) -> str:
    low, high = schema.get("minimum"), schema.get("maximum")
    if low is not None and high is not None and not {"exclusiveMinimum", "exclusiveMaximum"} \
            & schema.keys():
        return f" from {_number(low)} to {_number(high)}"
    bounds = [f"{sign} {_number(schema[key])}" for key, sign in (
        ("minimum", "≥"), ("exclusiveMinimum", ">"), ("maximum", "≤"), ("exclusiveMaximum", "<"))
        if key in schema]
    return (" " + " and ".join(bounds)) if bounds else ""


def _number(value) -> str:
    return f"{value:g}" if isinstance(value, float) else str(value)


def shown(value) -> str:
    """A refused value quoted back as the client wrote it (JSON), in one short line."""
    if isinstance(value, str) and len(value) > SHOWN:
        return f"a string of {len(value)} characters"
    text = terminal(json.dumps(value, ensure_ascii=False, default=str))
    return text if len(text) <= SHOWN else text[:SHOWN - 1] + "…"


def prompt_problem(name: str, known: dict, arguments: dict | None) -> str | None:
    """Why a prompt cannot be rendered with these arguments (`known`: its declared arguments
    by name, each required or not), or None."""
    given = set(arguments or {})
    missing = sorted(arg for arg, required in known.items() if required and arg not in given)
    unknown = sorted(given - set(known))
    takes = ", ".join(f"`{arg}`" + ("" if required else " (optional)")
                      for arg, required in known.items())
    if missing:
        return f"prompt {name} needs " + ", ".join(f"`{arg}`" for arg in missing) + \
            f"; it takes {takes}"
    if unknown:
        return f"prompt {name} takes no " + ", ".join(
            f"`{terminal(arg)[:SHOWN]}`" for arg in unknown) + f"; it takes {takes}"
    return None
