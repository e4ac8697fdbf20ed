//! Ctrl-C and SIGTERM: the first asks the run to stop after the current iteration chunk (then
//! it writes a checkpoint and its outputs); a second one ends the process at once.
use signal_hook::consts::{SIGINT, SIGTERM};
use signal_hook::flag;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

/// Whether a stop was requested by a signal.
#[derive(Clone)]
pub struct Interrupt(Arc<AtomicBool>);

impl Interrupt {
    /// Installs the handlers for SIGINT and SIGTERM.
    pub fn install() -> std::io::Result<Interrupt> {
        let requested = Arc::new(AtomicBool::new(false));
        for signal in [SIGINT, SIGTERM] {
            // Registered first, so it sees the flag as it was before this signal set it.
            flag::register_conditional_shutdown(signal, 130, Arc::clone(&requested))?;
            flag::register(signal, Arc::clone(&requested))?;
        }
        Ok(Interrupt(requested))
    }

    /// Whether SIGINT or SIGTERM has arrived.
    pub fn requested(&self) -> bool {
        self.0.load(Ordering::Relaxed)
    }
}
