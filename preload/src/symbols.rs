//! Global variables of an unmodified program, read from its own memory by symbol name.
//!
//! `--stop-if 'server_x.count >= 2'` names a C global: the LD finds `count` in the symbol table
//! (`.symtab`, or the dynamic one) of the executable, adds the executable's load address, and
//! reads the value in place (it runs inside the process). Shared libraries' exported globals
//! are found with `dlsym`. Lookups are cached; a stripped executable has no `.symtab`, and then
//! only exported symbols can be found.

use ddbx_wire::pred::MemType;
use std::collections::HashMap;

/// Cached symbol addresses (`None`: not found).
#[derive(Default)]
pub struct Symbols {
    found: HashMap<String, Option<usize>>,
    table: Option<Vec<DataSymbol>>,
}

/// A data symbol of the executable.
struct DataSymbol {
    name: String,
    /// Its address before relocation.
    value: u64,
}

/// The fields of an ELF section header that the symbol reader needs.
struct Section {
    /// `sh_type`.
    kind: u32,
    /// `sh_offset`.
    offset: usize,
    /// `sh_size`.
    size: usize,
    /// `sh_link` (for a symbol table: its string table).
    link: u32,
}

impl Symbols {
    /// The value of global `name` as `ty`, if the program has such a symbol.
    pub fn read(&mut self, name: &str, ty: MemType) -> Option<i64> {
        let addr = match self.found.get(name) {
            Some(a) => *a,
            None => {
                let a = self.lookup(name);
                self.found.insert(name.to_string(), a);
                a
            }
        }?;
        let mut bytes = [0u8; 8];
        let n = ty.size();
        for (i, b) in bytes.iter_mut().take(n).enumerate() {
            // SAFETY: addr is the address of a data symbol of this process of at least the
            // size the user named (a wrong type reads neighbouring bytes of the same mapping).
            *b = unsafe { std::ptr::read_volatile((addr as *const u8).add(i)) };
        }
        ty.decode(&bytes[..n])
    }

    fn lookup(&mut self, name: &str) -> Option<usize> {
        if self.table.is_none() {
            self.table = Some(executable_symbols().unwrap_or_default());
        }
        let value = self
            .table
            .as_ref()?
            .iter()
            .find(|s| s.name == name)
            .map(|s| s.value);
        if let Some(v) = value {
            return Some(load_bias().wrapping_add(v as usize));
        }
        let cname = std::ffi::CString::new(name).ok()?;
        // SAFETY: dlsym with a valid C string.
        let p = unsafe { libc::dlsym(libc::RTLD_DEFAULT, cname.as_ptr()) };
        (!p.is_null()).then_some(p as usize)
    }
}

/// The executable's load bias (0 for a non-PIE executable).
fn load_bias() -> usize {
    unsafe extern "C" fn first(
        info: *mut libc::dl_phdr_info,
        _size: usize,
        data: *mut libc::c_void,
    ) -> libc::c_int {
        // SAFETY: the loader passes a valid info; data is our usize.
        unsafe { *(data as *mut usize) = (*info).dlpi_addr as usize };
        1 // the first object is the executable: stop
    }
    let mut bias: usize = 0;
    // SAFETY: the callback writes only into `bias`.
    unsafe { libc::dl_iterate_phdr(Some(first), &mut bias as *mut usize as *mut libc::c_void) };
    bias
}

/// The data symbols (STT_OBJECT) of the executable: name and value.
fn executable_symbols() -> Option<Vec<DataSymbol>> {
    let elf = std::fs::read("/proc/self/exe").ok()?;
    let u16_at = |o: usize| elf.get(o..o + 2).map(|b| u16::from_le_bytes([b[0], b[1]]));
    let u32_at = |o: usize| {
        elf.get(o..o + 4)
            .map(|b| u32::from_le_bytes([b[0], b[1], b[2], b[3]]))
    };
    let u64_at = |o: usize| {
        elf.get(o..o + 8).map(|b| {
            let mut a = [0u8; 8];
            a.copy_from_slice(b);
            u64::from_le_bytes(a)
        })
    };
    if elf.get(..4)? != b"\x7fELF" || elf.get(4) != Some(&2) {
        return None;
    }
    let shoff = u64_at(0x28)? as usize;
    let shentsize = u16_at(0x3a)? as usize;
    let shnum = u16_at(0x3c)? as usize;
    let section = |i: usize| -> Option<Section> {
        let base = shoff + i * shentsize;
        Some(Section {
            kind: u32_at(base + 4)?,
            offset: u64_at(base + 0x18)? as usize,
            size: u64_at(base + 0x20)? as usize,
            link: u32_at(base + 0x28)?,
        })
    };
    let mut out = Vec::new();
    for i in 0..shnum {
        let symbols = section(i)?;
        if symbols.kind != 2 && symbols.kind != 11 {
            continue; // SHT_SYMTAB, SHT_DYNSYM
        }
        let names = section(symbols.link as usize)?;
        let strings = elf.get(names.offset..names.offset + names.size)?;
        for s in (symbols.offset..symbols.offset + symbols.size).step_by(24) {
            let name_at = u32_at(s)? as usize;
            let info = *elf.get(s + 4)?;
            let value = u64_at(s + 8)?;
            if info & 0xf != 1 || value == 0 {
                continue; // STT_OBJECT with an address
            }
            let name = strings.get(name_at..)?;
            let end = name.iter().position(|b| *b == 0)?;
            out.push(DataSymbol {
                name: String::from_utf8_lossy(&name[..end]).into_owned(),
                value,
            });
        }
    }
    Some(out)
}
