//! `ferroflow info`: what this binary is and what it can run on here.
use crate::backends::cuda_probe;
use crate::Failure;

pub fn info() -> Result<(), Failure> {
    let threads = std::thread::available_parallelism().map_or(1, |n| n.get());
    println!(
        "ferroflow {} ({}-{})",
        env!("CARGO_PKG_VERSION"),
        std::env::consts::ARCH,
        std::env::consts::OS
    );
    println!("cpu threads: {threads}");
    println!("backends:");
    println!("  cpu   available: {threads} threads, f64 and f32");
    match cuda_probe() {
        Ok(device) => println!("  cuda  available: {device}"),
        Err(why) => println!("  cuda  unavailable: {why}"),
    }
    if cfg!(feature = "mpi") {
        println!("mpi: built in (decomposed runs over the processes of mpirun)");
    } else {
        println!("mpi: not built in (cargo build --release --features mpi)");
    }
    Ok(())
}
