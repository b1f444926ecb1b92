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

/// Whether `head` (the first bytes of an executable) is a statically linked ELF program:
/// `Some(true)` static, `Some(false)` dynamic, `None` not a 64-bit little-endian ELF executable
/// we can read (a script, another format, too short).
pub fn is_static(head: &[u8]) -> Option<bool> {
    if head.len() < 64 || &head[..4] != b"\x7fELF" || head[4] != 2 || head[5] != 1 {
        return None;
    }
    let u16_at = |o: usize| head.get(o..o + 2).map(|b| u16::from_le_bytes([b[0], b[1]]));
    let u32_at = |o: usize| {
        head.get(o..o + 4)
            .map(|b| u32::from_le_bytes([b[0], b[1], b[2], b[3]]))
    };
    let u64_at = |o: usize| {
        head.get(o..o + 8).map(|b| {
            let mut a = [0u8; 8];
            a.copy_from_slice(b);
            u64::from_le_bytes(a)
        })
    };
    let e_type = u16_at(16)?;
    if e_type != 2 && e_type != 3 {
        return None; // not an executable or a PIE
    }
    let phoff = u64_at(32)? as usize;
    let phentsize = u16_at(54)? as usize;
    let phnum = u16_at(56)? as usize;
    if phentsize < 4 {
        return None;
    }
    let mut dynamic_section = false;
    for i in 0..phnum {
        let p_type = u32_at(phoff + i * phentsize)?;
        match p_type {
            3 => return Some(false), // PT_INTERP: the dynamic loader runs
            2 => dynamic_section = true,
            _ => {}
        }
    }
    // No interpreter: static (including static-pie, which has PT_DYNAMIC but no loader).
    let _ = dynamic_section;
    Some(true)
}

/// Whether `head` (the first bytes of an ELF executable) is a Go program: one of its `PT_NOTE`
/// segments, within `head`, holds the Go toolchain's build id note (owner `Go`, type 4).
pub fn is_go(head: &[u8]) -> bool {
    if head.len() < 64 || &head[..4] != b"\x7fELF" || head[4] != 2 || head[5] != 1 {
        return false;
    }
    let u16_at = |o: usize| head.get(o..o + 2).map(|b| u16::from_le_bytes([b[0], b[1]]));
    let u32_at = |o: usize| {
        head.get(o..o + 4)
            .map(|b| u32::from_le_bytes([b[0], b[1], b[2], b[3]]))
    };
    let u64_at = |o: usize| {
        head.get(o..o + 8).map(|b| {
            let mut a = [0u8; 8];
            a.copy_from_slice(b);
            u64::from_le_bytes(a)
        })
    };
    let (Some(phoff), Some(phentsize), Some(phnum)) = (u64_at(32), u16_at(54), u16_at(56)) else {
        return false;
    };
    let (phoff, phentsize) = (phoff as usize, phentsize as usize);
    (0..phnum as usize).any(|i| {
        let ph = phoff + i * phentsize;
        if u32_at(ph) != Some(4) {
            return false; // not PT_NOTE
        }
        let (Some(offset), Some(size)) = (u64_at(ph + 8), u64_at(ph + 32)) else {
            return false;
        };
        let (start, end) = (offset as usize, (offset + size) as usize);
        let mut at = start;
        while at + 12 <= end.min(head.len()) {
            let (Some(namesz), Some(descsz), Some(kind)) =
                (u32_at(at), u32_at(at + 4), u32_at(at + 8))
            else {
                return false;
            };
            let name = head.get(at + 12..at + 12 + namesz as usize);
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
