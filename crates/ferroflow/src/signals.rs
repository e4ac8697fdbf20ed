//! Ctrl-C and SIGTERM, handled on a thread of their own so that they are answered at once,
//! however long the current chunk of iterations takes. The first is acknowledged on standard
//! error and asks the run to stop at its next residual check (it then writes a checkpoint and
//! its results); a second one aborts at once, without them (a checkpoint written earlier
//! stays). Both exit with 130.
use signal_hook::consts::{SIGINT, SIGTERM};
use signal_hook::iterator::Signals;
use std::io::IsTerminal;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

/// Whether a stop was requested by a signal.
#[derive(Clone)]
pub struct Interrupt(Arc<AtomicBool>);

/// What the first signal says; the second's answer is the abort.
const STOPPING: &str = "stopping at the next residual check, then writing a checkpoint and \
    the results; press Ctrl-C again to abort at once without them";

impl Interrupt {
    /// Starts the thread that handles SIGINT and SIGTERM; `announce` (the process that reports,
    /// in an MPI job the first) says what each does.
    pub fn install(announce: bool) -> std::io::Result<Interrupt> {
        let requested = Arc::new(AtomicBool::new(false));
        let mut signals = Signals::new([SIGINT, SIGTERM])?;
        let flag = Arc::clone(&requested);
        std::thread::Builder::new()
            .name("signals".into())
            .spawn(move || {
                for signal in signals.forever() {
                    let name = if signal == SIGINT {
                        "Ctrl-C"
                    } else {
                        "SIGTERM"
                    };
                    // On a terminal the progress line is open: start a line of our own.
                    let newline = if std::io::stderr().is_terminal() {
                        "\n"
                    } else {
                        ""
                    };
                    if flag.swap(true, Ordering::SeqCst) {
                        if announce {
                            eprintln!(
                                "{newline}{name} again: aborted at once, without a checkpoint or \
                                 results (a checkpoint written earlier stays)"
                            );
                        }
                        // At once: no destructors, no flushing of a half-written file.
                        signal_hook::low_level::exit(130);
                    }
                    if announce {
                        eprintln!("{newline}{name}: {STOPPING}");
                    }
                }
            })?;
        Ok(Interrupt(requested))
    }

    /// Whether SIGINT or SIGTERM has arrived.
    pub fn requested(&self) -> bool {
        self.0.load(Ordering::Relaxed)
    }
}
