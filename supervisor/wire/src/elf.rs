//! Telling, from its first bytes, the programs whose calls ddbx cannot see: a statically linked
//! one, and a Go program.
//!
//! A statically linked executable has no program interpreter (`PT_INTERP`): the dynamic loader
//! never runs, so `LD_PRELOAD` is ignored and ddbx cannot see any of its calls. A Go program
//! loads it when it is dynamically linked (cgo), but the Go runtime makes its system calls
//! itself, not through libc: the hooks see none of its sockets. ddbx refuses to record either
//! as its root, and reports one started deeper in the tree (it runs unrecorded).

/// Bytes of the file start that [`is_static`] needs (headers of ordinary executables).
pub const HEADER_BYTES: usize = 4096;

/// The first bytes of a 64-bit little-endian ELF file, read as its header fields.
struct Head<'a>(&'a [u8]);

impl<'a> Head<'a> {
    /// `head` if it starts like a 64-bit little-endian ELF file.
    fn of(head: &'a [u8]) -> Option<Head<'a>> {
        let elf = head.len() >= 64 && &head[..4] == b"\x7fELF" && head[4] == 2 && head[5] == 1;
        elf.then_some(Head(head))
    }

    fn bytes<const N: usize>(&self, at: usize) -> Option<[u8; N]> {
        self.0.get(at..at.checked_add(N)?)?.try_into().ok()
    }

    fn u16(&self, at: usize) -> Option<u16> {
        self.bytes(at).map(u16::from_le_bytes)
    }

    fn u32(&self, at: usize) -> Option<u32> {
        self.bytes(at).map(u32::from_le_bytes)
    }

    fn u64(&self, at: usize) -> Option<u64> {
        self.bytes(at).map(u64::from_le_bytes)
    }

    /// The offsets of the program headers (`e_phoff`, `e_phentsize`, `e_phnum`).
    fn program_headers(&self) -> Option<impl Iterator<Item = usize>> {
        let phoff = self.u64(32)? as usize;
        let phentsize = self.u16(54)? as usize;
        let phnum = self.u16(56)? as usize;
        (phentsize >= 4).then(|| (0..phnum).map(move |i| phoff + i * phentsize))
    }
}

/// Whether `head` (the first bytes of an executable) is a statically linked ELF program:
/// `Some(true)` static, `Some(false)` dynamic, `None` not a 64-bit little-endian ELF executable
/// we can read (a script, another format, too short).
pub fn is_static(head: &[u8]) -> Option<bool> {
    let head = Head::of(head)?;
    let e_type = head.u16(16)?;
    if e_type != 2 && e_type != 3 {
        return None; // not an executable or a PIE
    }
    for ph in head.program_headers()? {
        if head.u32(ph)? == 3 {
            return Some(false); // PT_INTERP: the dynamic loader runs
        }
    }
    // No interpreter: static (including static-pie, which has PT_DYNAMIC but no loader).
    Some(true)
}

/// Whether `head` (the first bytes of an ELF executable) is a Go program: one of its `PT_NOTE`
/// segments, within `head`, holds the Go toolchain's build id note (owner `Go`, type 4).
pub fn is_go(head: &[u8]) -> bool {
    let Some(h) = Head::of(head) else {
        return false;
    };
    let Some(mut headers) = h.program_headers() else {
        return false;
    };
    headers.any(|ph| {
        if h.u32(ph) != Some(4) {
            return false; // not PT_NOTE
        }
        let (Some(offset), Some(size)) = (h.u64(ph + 8), h.u64(ph + 32)) else {
            return false;
        };
        let end = (offset.saturating_add(size) as usize).min(head.len());
        let mut at = offset as usize;
        while at + 12 <= end {
            let (Some(namesz), Some(descsz), Some(kind)) =
                (h.u32(at), h.u32(at + 4), h.u32(at + 8))
            else {
                return false;
            };
            let name = head.get(at + 12..(at + 12).saturating_add(namesz as usize));
            if kind == 4 && name.is_some_and(|n| n.starts_with(b"Go\0")) {
                return true;
            }
            let padded = |n: u32| (n as usize).div_ceil(4) * 4;
            at += 12 + padded(namesz) + padded(descsz);
        }
        false
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn head_of(path: &str) -> Vec<u8> {
        let mut bytes = std::fs::read(path).unwrap_or_default();
        bytes.truncate(HEADER_BYTES);
        bytes
    }

    #[test]
    fn system_programs_are_dynamic() {
        assert_eq!(is_static(&head_of("/bin/sh")), Some(false));
    }

    #[test]
    fn scripts_and_garbage_are_not_elf() {
        assert_eq!(is_static(b"#!/bin/sh\necho hi\n"), None);
        assert_eq!(is_static(&[0x7f, b'E', b'L', b'F']), None);
    }

    #[test]
    fn a_static_build_is_recognised() {
        let dir = std::env::temp_dir().join(format!("ddbx-elf-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let src = dir.join("s.c");
        std::fs::write(&src, "int main(void){return 0;}\n").unwrap();
        let out = dir.join("s");
        let built = std::process::Command::new("gcc")
            .arg("-static")
            .arg("-o")
            .arg(&out)
            .arg(&src)
            .status();
        if built.is_ok_and(|s| s.success()) {
            assert_eq!(is_static(&head_of(out.to_str().unwrap())), Some(true));
        } else {
            eprintln!("no static libc here: only the dynamic case was checked");
        }
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn go_programs_are_told_by_their_build_id_note() {
        assert!(!is_go(&head_of("/bin/sh")));
        assert!(!is_go(b"#!/bin/sh\n"));
        // A note like the Go linker's, in a PT_NOTE segment of a minimal ELF header.
        let mut head = vec![0u8; 512];
        head[..6].copy_from_slice(b"\x7fELF\x02\x01");
        head[16] = 2; // ET_EXEC
        head[32..40].copy_from_slice(&64u64.to_le_bytes()); // e_phoff
        head[54..56].copy_from_slice(&56u16.to_le_bytes()); // e_phentsize
        head[56..58].copy_from_slice(&1u16.to_le_bytes()); // e_phnum
        let note = [
            &4u32.to_le_bytes()[..],
            &8u32.to_le_bytes(),
            &4u32.to_le_bytes(),
            b"Go\0\0",
            b"buildid!",
        ]
        .concat();
        head[64..68].copy_from_slice(&4u32.to_le_bytes()); // PT_NOTE
        head[72..80].copy_from_slice(&256u64.to_le_bytes()); // p_offset
        head[96..104].copy_from_slice(&(note.len() as u64).to_le_bytes()); // p_filesz
        head[256..256 + note.len()].copy_from_slice(&note);
        assert!(is_go(&head));
        head[268] = b'X'; // another owner
        assert!(!is_go(&head));
        if std::path::Path::new("/usr/bin/webhook").exists() {
            assert!(
                is_go(&head_of("/usr/bin/webhook")),
                "Debian's webhook is a Go program"
            );
        }
    }
}
