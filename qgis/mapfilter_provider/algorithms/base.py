"""What every mapfilter algorithm shares: naming, help from the CLI's own
`--help`, typed parameters tied to CLI options, the binary, `--overwrite`,
and running the command. A command's algorithm is one small subclass: it
declares its parameters in `define` and turns their values into the CLI's
arguments in `arguments`."""

import html
import os

from qgis.PyQt.QtCore import QCoreApplication
from qgis.core import (
    QgsProcessingAlgorithm,
    QgsProcessingException,
    QgsProcessingParameterBoolean,
    QgsProcessingParameterDefinition,
    QgsProcessingParameterEnum,
    QgsProcessingParameterNumber,
)

from .. import binary as binaries
from .. import cli_help
from .. import runner

GROUPS = {"classes": "Class maps", "images": "Images"}


def number_text(value):
    """A number as the CLI reads it: integers without a decimal point."""
    value = float(value)
    return str(int(value)) if value.is_integer() else repr(value)


class MapfilterAlgorithm(QgsProcessingAlgorithm):
    """Base of the algorithms; subclasses set `command`, `label`, `group_key`
    and implement `define` and `arguments`."""

    command = None
    label = None
    group_key = "classes"
    # The `--help` whose options the parameters stand for, when it is not
    # `mapfilter COMMAND --help` (batch: `batch plan`).
    help_command = None

    def __init__(self):
        super().__init__()
        # Parameter name -> the CLI option (or argument) it stands for.
        self._cli = {}

    # --- identity -------------------------------------------------------
    def name(self):
        return self.command

    def displayName(self):
        return self.tr(self.label)

    def group(self):
        return self.tr(GROUPS[self.group_key])

    def groupId(self):
        return self.group_key

    def tags(self):
        return ["mapfilter", self.command]

    def createInstance(self):
        return type(self)()

    def tr(self, text):
        return QCoreApplication.translate("mapfilter", text)

    # --- help from the CLI ------------------------------------------------
    @property
    def cli(self):
        return cli_help.command(self.help_command or self.command)

    def cli_entry(self, option):
        """The `--help` entry of an option, of an argument given as <NAME>, or
        of another command's option given as COMMAND:OPTION."""
        if option.startswith("<"):
            return self.cli.argument(option.strip("<>"))
        if ":" in option:
            command, name = option.split(":")
            return cli_help.command(command).option(name)
        return self.cli.option(option)

    def about(self):
        """The first paragraph of the help (the command's summary)."""
        return f"<p>{html.escape(self.cli.about)}.</p>"

    def shortHelpString(self):
        parts = [
            self.about(),
            f"<p><code>mapfilter {self.help_command or self.command}</code>:</p><ul>",
        ]
        for definition in self.parameterDefinitions():
            option = self._cli.get(definition.name())
            if option is None:
                continue
            flag = option if option.startswith("<") else f"--{option.split(':')[-1]}"
            parts.append(
                f"<li><b>{html.escape(definition.description())}</b> "
                f"(<code>{html.escape(flag)}</code>): "
                f"{html.escape(self.cli_entry(option).help)}</li>"
            )
        parts.append("</ul>")
        return "".join(parts)

    # --- parameters tied to CLI options -----------------------------------
    def add(self, parameter, option=None, advanced=False):
        """Adds a parameter; `option` names the CLI option whose help it shows."""
        if option is not None:
            self._cli[parameter.name()] = option
            help_text = self.cli_entry(option).help
            if hasattr(parameter, "setHelp"):
                parameter.setHelp(help_text)
        if advanced:
            parameter.setFlags(parameter.flags() | QgsProcessingParameterDefinition.FlagAdvanced)
        self.addParameter(parameter)
        return parameter

    def default(self, option):
        """The CLI's default of an option, as `--help` states it."""
        return self.cli.option(option).default

    def enum_parameter(self, name, description, option, choices=None, default=None, **kw):
        """An enum of the option's values (its `[possible values]` unless given),
        defaulting to the CLI's default."""
        choices = list(choices or self.cli.option(option).choices)
        default = default if default is not None else self.default(option)
        index = choices.index(default) if default in choices else None
        return QgsProcessingParameterEnum(
            name, self.tr(description), options=choices, defaultValue=index, **kw
        )

    def integer_parameter(self, name, description, option, default=None, **kw):
        if default is None and option is not None:
            default = self.default(option)
        return QgsProcessingParameterNumber(
            name,
            self.tr(description),
            type=QgsProcessingParameterNumber.Integer,
            defaultValue=None if default is None else int(default),
            **kw,
        )

    def double_parameter(self, name, description, option, default=None, **kw):
        if default is None and option is not None:
            default = self.default(option)
        return QgsProcessingParameterNumber(
            name,
            self.tr(description),
            type=QgsProcessingParameterNumber.Double,
            defaultValue=None if default is None else float(default),
            **kw,
        )

    def flag_parameter(self, name, description):
        """A CLI flag: off unless given, as on the command line."""
        return QgsProcessingParameterBoolean(name, self.tr(description), defaultValue=False)

    # --- reading values into CLI arguments ---------------------------------
    @staticmethod
    def given(parameters, name):
        value = parameters.get(name)
        return value is not None and value != ""

    def enum_text(self, parameters, name, context):
        """The chosen value of an enum parameter (its default when not given),
        or None when unset and without a default."""
        parameter = self.parameterDefinition(name)
        if not self.given(parameters, name) and parameter.defaultValue() is None:
            return None
        index = self.parameterAsEnum(parameters, name, context)
        return parameter.options()[index]

    def number_args(self, parameters, context, pairs):
        """`--option VALUE` for each (parameter, option) whose value is given."""
        args = []
        for name, option in pairs:
            if self.given(parameters, name):
                value = self.parameterAsDouble(parameters, name, context)
                args += [f"--{option}", number_text(value)]
        return args

    def flag_args(self, parameters, context, pairs):
        return [
            f"--{option}"
            for name, option in pairs
            if self.parameterAsBoolean(parameters, name, context)
        ]

    def raster_path(self, parameters, name, context):
        layer = self.parameterAsRasterLayer(parameters, name, context)
        if layer is None:
            raise QgsProcessingException(self.invalidRasterError(parameters, name))
        if layer.providerType() != "gdal":
            raise QgsProcessingException(
                f"{layer.name()} is not a file GDAL reads (hint: save it as GeoTIFF first)"
            )
        return layer.source().split("|")[0]

    # --- running -------------------------------------------------------------
    def canExecute(self):
        try:
            binaries.find_binary()
        except binaries.BinaryNotFound as e:
            return False, str(e)
        return True, ""

    def define(self):
        """Adds the parameters (subclasses)."""
        raise NotImplementedError

    def arguments(self, parameters, context, feedback):
        """The CLI arguments after `mapfilter COMMAND`, the results to return
        and the output paths written, as (args, results, outputs)."""
        raise NotImplementedError

    def phases(self, parameters, context):
        """How the command's progress phases fill the bar (runner.Phases)."""
        return runner.Phases()

    def after_run(self, stdout, parameters, context, feedback, results):
        """Adds results read from the run's output (subclasses)."""
        return results

    def initAlgorithm(self, config=None):
        self.define()

    @staticmethod
    def binary():
        """The mapfilter binary, or QgsProcessingException saying how to install it."""
        try:
            return binaries.find_binary()
        except binaries.BinaryNotFound as e:
            raise QgsProcessingException(str(e)) from e

    def processAlgorithm(self, parameters, context, feedback):
        binary = self.binary()
        args, results, outputs = self.arguments(parameters, context, feedback)
        if any(os.path.exists(p) for p in outputs) and binaries.supports_overwrite(
            binary, self.command
        ):
            args.append("--overwrite")
        stdout = runner.run(
            binary, [self.command] + args, feedback, self.phases(parameters, context)
        )
        return self.after_run(stdout, parameters, context, feedback, results)
