//! `mapfilter devices`: the OpenCL devices of this machine, with the index
//! `--device INDEX` takes. Needs no GDAL; without OpenCL it says so.

use crate::device::{device_table, list_devices};
use crate::error::Result;
use clap::Args;

#[derive(Args, Debug)]
pub struct DevicesArgs {}

pub fn run(_args: DevicesArgs) -> Result<()> {
    match list_devices() {
        Ok(devices) if !devices.is_empty() => print!("{}", device_table(&devices)),
        Ok(_) => println!("OpenCL is installed but reports no devices; only --device host works"),
        Err(e) => println!("{e}"),
    }
    println!(
        "host: the plain Rust path (rayon, {} threads)",
        rayon::current_num_threads()
    );
    Ok(())
}
