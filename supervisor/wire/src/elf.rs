//! Telling a statically linked program from a dynamically linked one, from its first bytes.
//!
//! A statically linked executable has no program interpreter (`PT_INTERP`): the dynamic loader
//! never runs, so `LD_PRELOAD` is ignored and ddbx cannot see any of its calls. ddbx refuses to
//! record such a program as its root, and reports one started deeper in the tree.

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
}
