"""The mapfilter CLI's own `--help`, parsed: each command's summary and, per
option, its help line, default and possible values.

The help texts live in cli_help.json beside this module, generated from the
binary by qgis/tools/gen_cli_help.py (and checked against it by the tests),
so the toolbox shows the CLI's wording and defaults even before a binary is
configured. Plain Python: no QGIS import, so the generator can use it too.
"""

import json
import os
import re

HELP_FILE = os.path.join(os.path.dirname(__file__), "cli_help.json")

_OPTION = re.compile(r"^\s+(?:-(\w), )?--([\w-]+)((?: <[^>]+>)*)(?:\.\.\.)?(?:\s{2,}(.*))?$")
_ARGUMENT = re.compile(r"^\s+<([^>]+)>(?:\.\.\.)?(?:\s{2,}(.*))?$")
_DEFAULT = re.compile(r"\[default: ([^\]]*)\]")
_POSSIBLE = re.compile(r"\[possible values: ([^\]]*)\]")
_VALUE_ITEM = re.compile(r"^- ([\w-]+):\s*(.*)$")


class Option:
    """One option or argument of a command, as `--help` describes it."""

    def __init__(self, name, short=None, value=None):
        self.name = name
        self.short = short
        self.value = value
        self.lines = []

    @property
    def text(self):
        return "\n".join(self.lines)

    @property
    def default(self):
        m = _DEFAULT.search(self.text)
        return m.group(1) if m else None

    @property
    def choices(self):
        m = _POSSIBLE.search(self.text)
        if m:
            return [v.strip() for v in m.group(1).split(",")]
        return [m.group(1) for m in map(_VALUE_ITEM.match, self.lines) if m]

    @property
    def help(self):
        """The help text without the default and possible-values notes."""
        text = _POSSIBLE.sub("", _DEFAULT.sub("", self.text))
        words = []
        for line in text.splitlines():
            line = line.strip()
            if line == "Possible values:":
                continue
            item = _VALUE_ITEM.match(line)
            words.append(f"{item.group(1)}: {item.group(2)};" if item else line)
        return " ".join(w for w in words if w).rstrip(";")


class Command:
    """A subcommand's summary, arguments and options."""

    def __init__(self, name, text):
        self.name = name
        self.text = text
        self.about, self.options, self.arguments = _parse(text)

    def option(self, name):
        """The option `--NAME`; a KeyError names the command if it is missing."""
        try:
            return self.options[name]
        except KeyError:
            raise KeyError(f"mapfilter {self.name} --help has no --{name}") from None

    def argument(self, name):
        return self.arguments[name]


def _parse(text):
    about_lines, options, arguments = [], {}, {}
    section, current = "about", None
    for raw in text.splitlines():
        line = raw.rstrip()
        if line.startswith("Usage:"):
            section, current = "usage", None
            continue
        if line in ("Arguments:", "Options:"):
            section, current = line[:-1].lower(), None
            continue
        if section == "about":
            if line:
                about_lines.append(line)
            continue
        if section == "options":
            m = _OPTION.match(line)
            if m and len(line) - len(line.lstrip()) <= 6:
                current = Option(m.group(2), m.group(1), m.group(3).strip() or None)
                options[current.name] = current
                if m.group(4):
                    current.lines.append(m.group(4))
                continue
        if section == "arguments":
            m = _ARGUMENT.match(line)
            if m and len(line) - len(line.lstrip()) <= 2:
                current = Option(m.group(1))
                arguments[current.name] = current
                if m.group(2):
                    current.lines.append(m.group(2))
                continue
        if current is not None and line.strip():
            current.lines.append(line.strip())
    return " ".join(about_lines), options, arguments


_COMMANDS = None


def command(name):
    """The parsed `mapfilter NAME --help` from cli_help.json."""
    global _COMMANDS
    if _COMMANDS is None:
        with open(HELP_FILE, encoding="utf-8") as f:
            texts = json.load(f)["commands"]
        _COMMANDS = {n: Command(n, t) for n, t in texts.items()}
    return _COMMANDS[name]
