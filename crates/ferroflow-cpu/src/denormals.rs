//! Flush-to-zero for the worker threads. A flow started from rest spreads into the domain as
//! exponentially small values that pass through the subnormal range, where x86 arithmetic is
//! tens of times slower; values that small carry no information for a steady solution.

/// Sets flush-to-zero and denormals-are-zero for the calling thread.
pub(crate) fn flush_to_zero() {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: only the FTZ (bit 15) and DAZ (bit 6) flags of this thread's MXCSR change.
    unsafe {
        let mut csr: u32 = 0;
        std::arch::asm!("stmxcsr [{}]", in(reg) &mut csr, options(nostack));
        csr |= 0x8040;
        std::arch::asm!("ldmxcsr [{}]", in(reg) &csr, options(nostack));
    }
    #[cfg(target_arch = "aarch64")]
    // SAFETY: only the FZ flag (bit 24) of this thread's FPCR changes.
    unsafe {
        let mut fpcr: u64;
        std::arch::asm!("mrs {}, fpcr", out(reg) fpcr, options(nomem, nostack));
        fpcr |= 1 << 24;
        std::arch::asm!("msr fpcr, {}", in(reg) fpcr, options(nomem, nostack));
    }
}
