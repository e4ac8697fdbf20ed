//! `ferroflow cases`: the built-in cases, listed or printed in full to start a new case from,
//! and the key tables of `docs/cases.md`.
use crate::input::{LoadedCase, Source};
use crate::Failure;
use clap::{Args, Subcommand};
use ferroflow_cases::case::{builtin, BUILTIN};
use ferroflow_cases::docs::{self, key_tables_markdown};
use ferroflow_cases::fem::{FemCase, SolverKind, FEM_BUILTIN};
use ferroflow_cases::fv::{FvCase, FV_BUILTIN};
use std::fs;
use std::path::PathBuf;

/// Arguments of `ferroflow cases`.
#[derive(Args)]
#[command(after_help = "\
Examples:
  ferroflow cases                                  # one line per built-in case
  ferroflow cases show cavity2d-re1000 > my.toml   # full TOML, every key commented
  ferroflow cases show old.toml > new.toml         # a case file in the current schema
  ferroflow run my.toml
  ferroflow cases docs --update docs/cases.md      # regenerate the key tables of the docs")]
pub struct CasesArgs {
    #[command(subcommand)]
    action: Option<CasesAction>,
}

#[derive(Subcommand)]
enum CasesAction {
    /// Print a built-in case or a case file as TOML with every key, its default and allowed
    /// values (a file of an earlier schema in the current one).
    #[command(after_help = "\
Examples:
  ferroflow cases show bdc2d                       # read it
  ferroflow cases show cavity3d-re100 > my.toml    # start a case file from it, then edit
  ferroflow cases show old-case.toml               # a case file in the current schema")]
    Show {
        /// Built-in case name (see `ferroflow cases`) or case file.
        name: String,
    },
    /// Print the key tables of docs/cases.md, as generated from the keys' documentation.
    ///
    /// The output is the region of docs/cases.md from its `<!-- generated` line to its
    /// `<!-- end` line; --update replaces that region of a file in place.
    #[command(after_help = "\
Examples:
  ferroflow cases docs                             # print the tables
  ferroflow cases docs --update docs/cases.md      # replace them in the file")]
    Docs {
        /// Replace the generated region of this Markdown file instead of printing it.
        #[arg(long, value_name = "FILE")]
        update: Option<PathBuf>,
    },
}

pub fn cases(args: CasesArgs) -> Result<(), Failure> {
    match args.action {
        None => {
            for (name, _) in BUILTIN {
                let case = builtin(name).expect("built-in cases parse");
                println!("{name:<18} {}", case.case.description);
            }
            for (name, text) in FEM_BUILTIN {
                let case = FemCase::from_toml(text, name).expect("built-in cases parse");
                println!("{name:<18} {}", case.case.description);
            }
            for (name, text) in FV_BUILTIN {
                let case = FvCase::from_toml(text, name).expect("built-in cases parse");
                println!("{name:<18} {}", case.case.description);
            }
        }
        Some(CasesAction::Show { name }) => {
            let source = Source::read(&name)?;
            let commented = match source.solver()? {
                SolverKind::FiniteElement => FemCase::from_toml(&source.text, &source.origin)
                    .map_err(Failure::input)?
                    .to_commented_toml(),
                SolverKind::FiniteVolume => FvCase::from_toml(&source.text, &source.origin)
                    .map_err(Failure::input)?
                    .to_commented_toml(),
                SolverKind::Structured => LoadedCase::load(&name, &[])?.case.to_commented_toml(),
            };
            // The case file's own header comment says what the case is and where its
            // reference data come from.
            for line in source.text.lines().take_while(|l| l.starts_with('#')) {
                println!("{line}");
            }
            println!("#");
            println!("# Every key is listed with its value; all are optional (defaults in");
            println!("# docs/cases.md). Save, edit, then: ferroflow run my-case.toml");
            println!();
            print!("{commented}");
        }
        Some(CasesAction::Docs { update: None }) => println!("{}", key_tables_markdown()),
        Some(CasesAction::Docs { update: Some(file) }) => {
            let shown = file.display();
            let mut text = fs::read_to_string(&file)
                .map_err(|e| Failure::input(format!("cannot read {shown}: {e}")))?;
            let region = docs::region(&text).ok_or_else(|| {
                Failure::input(format!(
                    "{shown} has no generated region: a line '{}', the tables, a line '{}'",
                    docs::BEGIN,
                    docs::END
                ))
            })?;
            let tables = key_tables_markdown();
            if text[region.clone()] == tables {
                println!("{shown}: key tables up to date");
            } else {
                text.replace_range(region, &tables);
                ferroflow_io::file::write(&file, text).map_err(Failure::runtime)?;
                println!("{shown}: key tables regenerated");
            }
        }
    }
    Ok(())
}
