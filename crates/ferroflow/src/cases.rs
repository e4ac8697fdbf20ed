//! `ferroflow cases`: the built-in cases, listed or printed in full to start a new case from.
use crate::input::builtin_names;
use crate::Failure;
use clap::{Args, Subcommand};
use ferroflow_cases::case::{builtin, BUILTIN};

/// Arguments of `ferroflow cases`.
#[derive(Args)]
#[command(after_help = "\
Examples:
  ferroflow cases                                  # one line per built-in case
  ferroflow cases show cavity2d-re1000 > my.toml   # full TOML, every key commented
  ferroflow run my.toml")]
pub struct CasesArgs {
    #[command(subcommand)]
    action: Option<CasesAction>,
}

#[derive(Subcommand)]
enum CasesAction {
    /// Print a built-in case as TOML with every key, its default and allowed values.
    Show {
        /// Built-in case name (see `ferroflow cases`).
        name: String,
    },
}

pub fn cases(args: CasesArgs) -> Result<(), Failure> {
    match args.action {
        None => {
            for (name, _) in BUILTIN {
                let case = builtin(name).expect("built-in cases parse");
                println!("{name:<18} {}", case.case.description);
            }
        }
        Some(CasesAction::Show { name }) => {
            let (case, text) = builtin(&name)
                .zip(BUILTIN.iter().find(|(n, _)| *n == name).map(|(_, t)| *t))
                .ok_or_else(|| {
                    Failure::input(format!(
                        "no built-in case named '{name}' (built-in: {})",
                        builtin_names()
                    ))
                })?;
            // The case file's own header comment says what the case is and where its
            // reference data come from.
            for line in text.lines().take_while(|l| l.starts_with('#')) {
                println!("{line}");
            }
            println!("#");
            println!("# Every key is listed with its value; all are optional (defaults in");
            println!("# docs/cases.md). Save, edit, then: ferroflow run my-case.toml");
            println!();
            print!("{}", case.to_commented_toml());
        }
    }
    Ok(())
}
