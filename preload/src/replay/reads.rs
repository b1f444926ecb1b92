//! The runs of reads of a shared file in a replay: the record logged only the first of the
//! reads an image made of such a file between two of its writes and in one gap (`~f`), and
//! the file's next write came after all of them; so a logged read counts for that write
//! (`Ld::read_counted`) only once its run is over: at the end of the file, at the image's
//! next logged read, at its next event, or before it waits for a child.

use crate::ld::Ld;

/// A logged read of the shared file `key` after `writes` writes returned `r`: it counts for the
/// file's next write once its run is over (at once if it found the end of the file). The
/// record logged only the first of the reads an image made between two writes, which all
/// came before the next one (a `grep` reads its buffer full, then again until the end).
pub fn read_made(ld: &mut Ld, key: u64, writes: u64, r: isize) {
    end_read_run(ld);
    match ld.replay.as_mut() {
        Some(replay) if r > 0 => replay.unfinished_read = Some((key, writes)),
        _ => ld.read_counted(key, writes),
    }
}

/// The file whose run of reads is not over, if any.
pub fn unfinished_read_of(ld: &Ld) -> Option<u64> {
    ld.replay.as_ref()?.unfinished_read.map(|(key, _)| key)
}

/// The run of reads of a shared file that a logged read began is over (the end of the file,
/// another file's logged read, the next event, a wait): it counts for the file's next write.
pub fn end_read_run(ld: &mut Ld) {
    if let Some((key, writes)) = ld.replay.as_mut().and_then(|r| r.unfinished_read.take()) {
        ld.read_counted(key, writes);
    }
}
