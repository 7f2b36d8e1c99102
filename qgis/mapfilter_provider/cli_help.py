"""The mapfilter CLI's own description of its commands: each command's
summary and, per option, its help, default and possible values.

The description lives in cli_help.json beside this module, the output of
`mapfilter describe --json` (generated from the same clap definitions as
`--help`) for the commands the provider offers, written by
qgis/tools/gen_cli_help.py and checked against the binary by the tests, so
the toolbox shows the CLI's wording and defaults even before a binary is
configured. Nothing here parses help text. Plain Python: no QGIS import, so
the generator can use it too.
"""

import json
import os

HELP_FILE = os.path.join(os.path.dirname(__file__), "cli_help.json")


class Option:
    """One option or argument of a command, as `describe --json` gives it."""

    def __init__(self, entry):
        self.entry = entry
        self.name = entry["name"]
        self.short = entry.get("short")
        names = entry.get("value_names") or []
        self.value = " ".join(f"<{n}>" for n in names) or None
        self.default = entry.get("default")
        self.choices = [c["name"] for c in entry.get("choices") or []]

    @property
    def help(self):
        """The help text, each possible value's own help after it."""
        words = [" ".join((self.entry.get("help") or "").split())]
        for choice in self.entry.get("choices") or []:
            if choice.get("help"):
                words.append(f"{choice['name']}: {' '.join(choice['help'].split())};")
        return " ".join(w for w in words if w).rstrip(";")

    @property
    def text(self):
        """The help with every possible value named."""
        return " ".join([self.help] + self.choices)


class Command:
    """A subcommand's summary, arguments and options."""

    def __init__(self, name, entry):
        self.name = name
        self.about = " ".join((entry.get("about") or "").split()).rstrip(".")
        self.options = {o["name"]: Option(o) for o in entry["options"]}
        self.arguments = {a["name"]: Option(a) for a in entry["arguments"]}

    def option(self, name):
        """The option `--NAME`; a KeyError names the command if it is missing."""
        try:
            return self.options[name]
        except KeyError:
            raise KeyError(f"mapfilter {self.name} has no --{name}") from None

    def argument(self, name):
        return self.arguments[name]


_COMMANDS = None


def command(name):
    """The described command NAME (`smooth`, `batch plan`) from cli_help.json."""
    global _COMMANDS
    if _COMMANDS is None:
        with open(HELP_FILE, encoding="utf-8") as f:
            entries = json.load(f)["commands"]
        _COMMANDS = {n: Command(n, e) for n, e in entries.items()}
    return _COMMANDS[name]
