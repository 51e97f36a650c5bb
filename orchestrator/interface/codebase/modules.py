"""Source modules as members with bodies, their rendering, and placing a given piece of code inside one.

A module is head lines, members (functions, methods, fields, template blocks) and tail lines. ``place``
puts a piece of code where code of its kind belongs: a declaration among the module's members (in place of
a member of the same name), a statement inside the body of the member whose topic it shares most words
with. Placement depends only on the module and the code, never on why the code is placed.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import PurePosixPath

from orchestrator.interface.codebase.names import pick, singular, words

_MODIFIERS = (
    r"^(?:(?:public|private|protected|internal|static|final|override|async|abstract|sealed|virtual"
    r"|readonly|suspend|open|const)\s+)+"
)
_DECLARATIONS: dict[str, tuple[str, ...]] = {
    "brace-go": (r"^func\s+(?:\([^)]*\)\s*)?([A-Za-z_]\w*)", r"^(?:var|const|type)\s+([A-Za-z_]\w*)"),
    "brace": (r"^(?:\w+\s+)*fun\s+(\w+)", _MODIFIERS + r".*?(\w+)\s*(?:\(|=|;)"),
    "brace-js": (
        r"^(?:export\s+)?(?:default\s+)?(?:async\s+)?function\s*\*?\s*(\w+)",
        r"^(?:export\s+)?class\s+(\w+)",
    ),
    "brace-rs": (r"^(?:pub(?:\([^)]*\))?\s+)?(?:async\s+)?fn\s+(\w+)",),
    "python": (r"^(?:async\s+)?def\s+(\w+)", r"^class\s+(\w+)"),
    "ruby": (r"^def\s+(?:self\.)?(\w+[?!]?)", r"^(?:class|module)\s+(\w+)"),
    "markup": (),
}
_STYLES = {
    ".go": "brace-go",
    ".js": "brace-js",
    ".ts": "brace-js",
    ".tsx": "brace-js",
    ".rs": "brace-rs",
    ".py": "python",
    ".rb": "ruby",
    ".html": "markup",
    ".erb": "markup",
}
_RUBY_OPEN = re.compile(r"^\s*(def|class|module|if|unless|while|until|case|begin)\b|\bdo(\s*\|[^|]*\|)?\s*$")
_STRING = re.compile(r'"(?:\\.|[^"\\])*"|\'(?:\\.|[^\'\\])*\'|`[^`]*`')
_RETURN = re.compile(r"^\s*return\b")
_ASSIGNED = (
    re.compile(r"^\s*(?:const|let|var|val|auto|final|using var)\s+(?:mut\s+)?(\w+)\s*[:=]"),
    re.compile(r"^\s*(\w+(?:\s*,\s*\w+)*)\s*:="),
    re.compile(r"^\s*(?:[\w.]+(?:<[^=]*>)?(?:\[\])?\s+)(\w+)\s*=(?!=)"),
    re.compile(r"^\s*(\w+)\s*=(?!=)"),
)
_EXPRESSION = re.compile(r"(?:\{\{|<%=)\s*([A-Za-z_][\w.]*)")


@dataclass
class Member:
    name: str
    head: list[str]
    body: list[list[str]] = field(default_factory=list)
    tail: list[str] = field(default_factory=list)
    callable: bool = True  # False for fields, constants and code placed whole: never a host for statements
    topic: tuple[str, ...] = ()  # words saying what it does, e.g. the words of the operation it serves
    gap: bool = True  # a blank line before it
    depth: int | None = None  # its indent levels when not the module's (a Python class's methods)
    rank: int = 1  # among equally fitting hosts for a statement: 2 serves requests, 0 sets up


@dataclass
class Module:
    path: str
    role: str  # main | config | core | endpoint | client | store | job | template | security | build | image
    subject: str = ""  # the operation, dependency or job the module is for
    head: list[str] = field(default_factory=list)
    members: list[Member] = field(default_factory=list)
    tail: list[str] = field(default_factory=list)
    depth: int = 0  # indent levels of the members (1 inside a class)
    unit: int = 4
    top_gap: int = 1  # blank lines before a member at depth 0
    merged: list[str] = field(default_factory=list)  # subjects of modules that share its path

    def render(self) -> str:
        pad = " " * self.unit
        out = list(self.head)
        for member in self.members:
            depth = self.depth if member.depth is None else member.depth
            if member.gap and out and not out[-1].rstrip().endswith("{"):
                wanted = self.top_gap if depth == 0 else 1
                while out[-1] == "" and wanted:
                    out.pop()
                out += [""] * wanted
            out += indent(member.head, pad * depth)
            for statement in member.body:
                out += indent(statement, pad * (depth + 1))
            out += indent(member.tail, pad * depth)
        out += self.tail
        return "\n".join(out).rstrip("\n") + "\n"


def indent(lines: list[str], prefix: str) -> list[str]:
    return [prefix + line if line.strip() else "" for line in lines]


def indent_text(text: str, prefix: str) -> str:
    """``text`` with ``prefix`` before every non-blank line (no side effects)."""
    return "\n".join(indent(text.rstrip("\n").split("\n"), prefix)) + "\n"


def style_of(path: str) -> str:
    return _STYLES.get(PurePosixPath(path).suffix, "brace")


def declared(lines: list[str], style: str) -> str | None:
    """The name the code declares when it is a declaration (a function, method, field), else None."""
    first = next((line for line in lines if line.strip() and not line.lstrip().startswith(("@", "["))), "")
    for pattern in _DECLARATIONS[style]:
        match = re.match(pattern, first)
        if match:
            return match.group(1)
    return None


def place(module: Module, code: str) -> str:
    """Put ``code`` into ``module`` where code of its kind belongs; returns the indent its lines got."""
    lines = code.rstrip("\n").split("\n")
    style = style_of(module.path)
    pad = " " * module.unit
    name = declared(lines, style)
    if name is not None:
        member = Member(name, lines + _closers(lines, style, module.unit), callable=False)
        for index, existing in enumerate(module.members):
            if existing.name == name:
                member.gap, member.depth = existing.gap, existing.depth
                module.members[index] = member
                return pad * (module.depth if member.depth is None else member.depth)
        module.members.insert(pick(f"{module.path}:{name}", len(module.members) + 1), member)
        return pad * module.depth
    hosts = [m for m in module.members if m.callable]
    if not hosts:
        module.members.append(Member("", lines + _closers(lines, style, module.unit), callable=False))
        return pad * module.depth
    host = max(hosts, key=lambda m: (_shared(m, lines), m.rank, -hosts.index(m)))
    statement = lines + _closers(lines, style, module.unit)
    prefix = pad * ((module.depth if host.depth is None else host.depth) + 1)
    if style == "markup":
        statement = ["<tr>", f"{pad}<td>{label(code)}</td>", *indent(lines, pad), "</tr>"]
        prefix += pad
    # The code stands in for what the host would compute the same way: statements declaring the same
    # names give way, and code that returns takes the place of the host's own return.
    names = _assigned(lines) - {"err", "e", "ex"}
    host.body = [s for s in host.body if not (s and _assigned(s[:1]) & names)]
    if host.body and _RETURN.match(lines[-1]) and _RETURN.match(host.body[-1][0]):
        host.body[-1] = statement
    else:
        host.body.insert(len(host.body) // 2, statement)
    return prefix


def label(markup: str) -> str:
    """A table label for a template expression: ``{{ order.shipping_cost.units }}`` -> Shipping cost."""
    match = _EXPRESSION.search(markup)
    parts = match.group(1).split(".") if match else ["value"]
    chosen = words(parts[1] if len(parts) > 2 else parts[-1]) or ["value"]
    return " ".join(chosen).capitalize()


def _assigned(lines: list[str]) -> set[str]:
    """The names the first statement-starting lines of ``lines`` declare or assign."""
    found: set[str] = set()
    for line in lines:
        for pattern in _ASSIGNED:
            match = pattern.match(line)
            if match:
                found.update(name.strip() for name in match.group(1).split(","))
                break
    return found


def _shared(member: Member, lines: list[str]) -> int:
    mine = {singular(w) for w in (*member.topic, *words(member.name)) if len(w) > 2}
    theirs = {singular(w) for token in re.findall(r"[A-Za-z_]\w*", "\n".join(lines)) for w in words(token)}
    return len(mine & theirs)


def _closers(lines: list[str], style: str, unit: int) -> list[str]:
    """Lines that close the blocks ``lines`` leaves open, so the module stays well formed."""
    if style == "ruby":
        return _ruby_closers(lines, unit)
    if not style.startswith("brace"):
        return []
    openers: list[str] = []
    for line in lines:
        code = _STRING.sub('""', line.split("//", 1)[0])
        for char in code:
            if char == "{":
                openers.append(line)
            elif char == "}" and openers:
                openers.pop()
    out: list[str] = []
    for depth, opener in reversed(list(enumerate(openers))):
        lead = opener[: len(opener) - len(opener.lstrip())]
        inner = lead + " " * unit
        if style == "brace-go" and depth == len(openers) - 1 and re.search(r"\berr\s*:?=", lines[-1]):
            out += [
                f"{inner}if err != nil {{",
                f"{inner}{' ' * unit}return {_go_zeros(openers[0])}",
                f"{inner}}}",
            ]
        elif style == "brace-go" and depth == 0 and opener.startswith("func"):
            zeros = _go_zeros(opener)
            if zeros:
                out.append(f"{inner}return {zeros}")
        out.append(f"{lead}}}")
    return out


def _go_zeros(signature: str) -> str:
    results = re.sub(r"^func\s+(?:\([^)]*\)\s*)?\w+\s*\([^)]*\)\s*", "", signature).rstrip(" {")
    types = [t.strip() for t in results.strip("()").split(",") if t.strip()]
    zero = {"string": '""', "bool": "false", "int": "0", "int64": "0", "float64": "0", "error": "nil"}
    return ", ".join(zero.get(t.split()[-1], "nil") for t in types)


def _ruby_closers(lines: list[str], unit: int) -> list[str]:
    openers: list[str] = []
    for line in lines:
        if _RUBY_OPEN.search(_STRING.sub('""', line)):
            openers.append(line)
        elif line.strip() == "end" and openers:
            openers.pop()
    out: list[str] = []
    assigned = re.match(r"^\s*([a-z_]\w*)\s*=[^=]", lines[-1])
    for depth, opener in reversed(list(enumerate(openers))):
        lead = opener[: len(opener) - len(opener.lstrip())]
        if depth == len(openers) - 1 and assigned:
            out.append(f"{lead}{' ' * unit}{assigned.group(1)}")
        out.append(f"{lead}end")
    return out
