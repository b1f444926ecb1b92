//! Record: making the real call, then writing the history record that says what it returned.
//!
//! One file per call family, mirrored file by file in `replay/`: whoever changes how an
//! outcome is recorded sees here what replay must reproduce, and there how it does. Each
//! family also has the pure builders that turn a call's result into its record (replay uses
//! them too, for the records of its own history).

pub mod datagram;
pub mod io;
pub mod peers;
pub mod probe;
pub mod process;
pub mod ready;
pub mod socket;
pub mod values;
