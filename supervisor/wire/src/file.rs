//! Reading a recording's files without ever blocking: a FIFO (or a device) put where a
//! manifest or a history should be would make a plain `read` wait for a writer for ever.

use std::io::Read;
use std::os::unix::fs::{DirBuilderExt, FileTypeExt, OpenOptionsExt, PermissionsExt};
use std::path::Path;

/// The whole contents of the regular file at `path`. Anything else (a FIFO, a socket, a
/// device, a directory) is refused with what it is, without waiting on it: the file is
/// opened non-blocking and checked before it is read.
pub fn read_regular(path: &Path) -> std::io::Result<Vec<u8>> {
    let mut bytes = Vec::new();
    open_regular(path)?.read_to_end(&mut bytes)?;
    Ok(bytes)
}

/// The regular file at `path`, open for reading (see [`read_regular`]).
pub fn open_regular(path: &Path) -> std::io::Result<std::fs::File> {
    let file = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK)
        .open(path)?;
    let kind = file.metadata()?.file_type();
    if !kind.is_file() {
        let what = if kind.is_fifo() {
            "a FIFO"
        } else if kind.is_socket() {
            "a socket"
        } else if kind.is_char_device() || kind.is_block_device() {
            "a device"
        } else if kind.is_dir() {
            "a directory"
        } else {
            "not a regular file"
        };
        return Err(std::io::Error::new(
            std::io::ErrorKind::InvalidInput,
            format!("expected a regular file, found {what}"),
        ));
    }
    Ok(file)
}

/// Creates (or truncates) the file at `path` for writing, readable and writable by its owner
/// only (mode 0600): a recording holds the program's environment and the bytes of its
/// outside peers.
pub fn create_private(path: &Path) -> std::io::Result<std::fs::File> {
    std::fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .mode(0o600)
        .open(path)
}

/// Creates the directory `path` (and its missing parents) with mode 0700; an existing
/// directory is made 0700 too.
pub fn create_private_dir(path: &Path) -> std::io::Result<()> {
    std::fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(path)?;
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o700))
}

/// [`read_regular`], as UTF-8 text.
pub fn read_regular_text(path: &Path) -> std::io::Result<String> {
    String::from_utf8(read_regular(path)?)
        .map_err(|e| std::io::Error::new(std::io::ErrorKind::InvalidData, e.utf8_error()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_fifo_is_refused_without_waiting() {
        let dir = std::env::temp_dir().join(format!("ddbx-wire-fifo-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let fifo = dir.join("manifest.ron");
        let c = std::ffi::CString::new(fifo.to_str().unwrap()).unwrap();
        // SAFETY: a valid C string.
        assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
        let e = read_regular(&fifo).unwrap_err();
        assert!(e.to_string().contains("found a FIFO"), "{e}");
        assert!(read_regular(&dir).is_err());
        std::fs::write(dir.join("f"), "x").unwrap();
        assert_eq!(read_regular_text(&dir.join("f")).unwrap(), "x");
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
