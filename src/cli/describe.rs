//! `mapfilter describe --json`: every command with its arguments and
//! options (names, value names, help, defaults, choices, whether required
//! or repeatable), read from the same clap definitions as `--help`, for
//! programs that build on the CLI (the QGIS provider) instead of parsing
//! help text.

use crate::error::Result;
use clap::{Arg, ArgAction, Args, CommandFactory};
use serde_json::{Map, Value, json};

#[derive(Args, Debug)]
pub struct DescribeArgs {
    /// Print the description as JSON on stdout (its only form).
    #[arg(long)]
    pub json: bool,
}

pub fn run(_args: DescribeArgs) -> Result<()> {
    let text = serde_json::to_string_pretty(&describe(&super::Cli::command())).map_err(|e| {
        crate::error::Error::internal(format!("cannot encode the description: {e}"))
    })?;
    super::scripting::write_stdout(format!("{text}\n").as_bytes())
}

/// The description of `cli`: its version and, by their names as typed
/// (`smooth`, `batch plan`), every command below it.
pub fn describe(cli: &clap::Command) -> Value {
    // Built, so that global options (`-v`, `--config`) show in every command.
    let mut cli = cli.clone();
    cli.build();
    let mut commands = Map::new();
    for sub in cli.get_subcommands() {
        add(sub, sub.get_name().to_string(), &mut commands);
    }
    json!({
        "version": cli.get_version(),
        "commands": commands,
    })
}

fn add(cmd: &clap::Command, name: String, into: &mut Map<String, Value>) {
    for sub in cmd.get_subcommands() {
        add(sub, format!("{name} {}", sub.get_name()), into);
    }
    let shown = |a: &&Arg| !a.is_hide_set() && !matches!(a.get_id().as_str(), "help" | "version");
    let about = cmd.get_long_about().or(cmd.get_about());
    into.insert(
        name,
        json!({
            "about": about.map(|s| s.to_string()),
            "arguments": cmd.get_positionals().filter(shown).map(argument).collect::<Vec<_>>(),
            "options": cmd
                .get_arguments()
                .filter(|a| !a.is_positional())
                .filter(shown)
                .map(argument)
                .collect::<Vec<_>>(),
        }),
    );
}

fn argument(a: &Arg) -> Value {
    let takes_value = matches!(a.get_action(), ArgAction::Set | ArgAction::Append);
    let value_names: Vec<String> = a
        .get_value_names()
        .map(|v| v.iter().map(|s| s.to_string()).collect())
        .unwrap_or_else(|| {
            if takes_value {
                vec![a.get_id().as_str().to_ascii_uppercase()]
            } else {
                Vec::new()
            }
        });
    let choices: Vec<Value> = if takes_value {
        a.get_possible_values()
            .iter()
            .filter(|v| !v.is_hide_set())
            .map(|v| json!({"name": v.get_name(), "help": v.get_help().map(|h| h.to_string())}))
            .collect()
    } else {
        Vec::new()
    };
    let defaults: Vec<String> = a
        .get_default_values()
        .iter()
        .map(|v| v.to_string_lossy().into_owned())
        .collect();
    let help = a.get_long_help().or(a.get_help()).map(|s| s.to_string());
    json!({
        "name": a.get_long().map_or_else(|| value_names.join(" "), str::to_string),
        "short": a.get_short().map(|c| c.to_string()),
        "value_names": value_names,
        "takes_value": takes_value,
        "repeatable": matches!(a.get_action(), ArgAction::Append | ArgAction::Count),
        "required": a.is_required_set(),
        "default": (takes_value && !defaults.is_empty()).then(|| defaults.join(",")),
        "choices": choices,
        "help": help,
        "global": a.is_global_set(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn described() -> Value {
        describe(&crate::cli::Cli::command())
    }

    fn option<'a>(d: &'a Value, command: &str, name: &str) -> &'a Value {
        d["commands"][command]["options"]
            .as_array()
            .unwrap()
            .iter()
            .find(|o| o["name"] == name)
            .unwrap_or_else(|| panic!("{command} --{name}"))
    }

    #[test]
    fn every_command_and_option_of_the_cli_is_described() {
        let d = described();
        let cli = crate::cli::Cli::command();
        for sub in cli.get_subcommands() {
            let entry = &d["commands"][sub.get_name()];
            assert!(entry.is_object(), "{}", sub.get_name());
            for arg in sub.get_arguments().filter(|a| !a.is_hide_set()) {
                let Some(long) = arg.get_long() else { continue };
                if matches!(long, "help" | "version") {
                    continue;
                }
                option(&d, sub.get_name(), long);
            }
        }
        assert!(d["commands"]["batch plan"]["options"].is_array());
    }

    #[cfg(feature = "gdal")]
    #[test]
    fn values_defaults_and_choices_are_the_clap_definitions() {
        let d = described();
        let kernel = option(&d, "smooth", "kernel");
        assert_eq!(kernel["short"], "k");
        assert_eq!(kernel["required"], true);
        assert_eq!(kernel["value_names"], json!(["KERNEL"]));
        assert!(kernel["help"].as_str().unwrap().contains("gaussian:250m"));
        let border = option(&d, "smooth", "border");
        assert_eq!(border["default"], "same");
        let names: Vec<&str> = border["choices"]
            .as_array()
            .unwrap()
            .iter()
            .map(|c| c["name"].as_str().unwrap())
            .collect();
        assert_eq!(names, ["same", "valid"]);
        let flag = option(&d, "smooth", "dry-run");
        assert_eq!(flag["takes_value"], false);
        assert!(flag["default"].is_null() && flag["choices"] == json!([]));
        assert_eq!(option(&d, "batch run", "stale-after")["default"], "10m");
        let input = &d["commands"]["smooth"]["arguments"][0];
        assert_eq!(input["name"], "INPUT");
        assert_eq!(input["required"], true);
        assert!(option(&d, "smooth", "verbose")["global"] == true);
    }
}
