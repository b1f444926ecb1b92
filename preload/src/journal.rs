//! The history journal: an actor's history file, appended to through a shared memory mapping
//! instead of one `write(2)` per event.
//!
//! The file is grown in chunks (`ftruncate`, then mapped again), so appending an event is a
//! copy into memory. Its length is the end of the last record: trailing zero bytes are room
//! not yet used. The process truncates the file to its real length at exit; a process killed
//! before that (SIGKILL) leaves the zeros, which the history reader treats as the end. An
//! exec'd image opens the same file again and finds the end by skipping the zeros; a forked
//! child drops the parent's mapping (without touching the file) before it opens its own.

use libc::c_int;

/// Growth step of the file.
const CHUNK: usize = 256 * 1024;

/// The mapping of one history file.
pub struct Journal {
    /// Start of the mapping (null: none).
    map: *mut u8,
    /// Bytes mapped (the file's size while mapped).
    cap: usize,
    /// Bytes of records written: the history's real length.
    len: usize,
}

impl Journal {
    /// No file.
    pub const fn none() -> Journal {
        Journal {
            map: std::ptr::null_mut(),
            cap: 0,
            len: 0,
        }
    }

    /// The journal of the history file open on `fd` (read-write): its real length is where
    /// the zeros at its end start.
    pub fn open(fd: c_int) -> Journal {
        let size = file_size(fd);
        let mut j = Journal {
            map: std::ptr::null_mut(),
            cap: 0,
            len: used_length(fd, size),
        };
        if size > 0 && !j.map_file(fd, size) {
            j.len = usize::MAX; // unusable: appends fail
        }
        j
    }

    /// Bytes of records so far.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Appends `bytes`; false if the file cannot grow.
    pub fn append(&mut self, fd: c_int, bytes: &[u8]) -> bool {
        if self.len == usize::MAX {
            return false;
        }
        let end = self.len + bytes.len();
        if end > self.cap || self.map.is_null() {
            let cap = end.div_ceil(CHUNK) * CHUNK;
            // SAFETY: ftruncate on our own fd.
            if unsafe { libc::ftruncate(fd, cap as libc::off_t) } != 0 || !self.map_file(fd, cap) {
                return false;
            }
        }
        // SAFETY: len..end lies inside the mapping (end <= cap), which we own.
        unsafe {
            std::ptr::copy_nonoverlapping(bytes.as_ptr(), self.map.add(self.len), bytes.len());
        }
        self.len = end;
        true
    }

    /// Cuts the file to its real length and drops the mapping (exit). Appending afterwards
    /// maps it again.
    pub fn finish(&mut self, fd: c_int) {
        self.unmap();
        if self.len != usize::MAX {
            // SAFETY: ftruncate on our own fd.
            unsafe { libc::ftruncate(fd, self.len as libc::off_t) };
            self.cap = 0;
        }
    }

    /// Drops the mapping without touching the file (a forked child, whose history is another
    /// file).
    pub fn abandon(&mut self) {
        self.unmap();
        self.len = 0;
    }

    fn unmap(&mut self) {
        if !self.map.is_null() {
            // SAFETY: our own mapping of cap bytes.
            unsafe { libc::munmap(self.map.cast(), self.cap) };
            self.map = std::ptr::null_mut();
        }
    }

    /// Maps the first `size` bytes of the file, replacing the current mapping.
    fn map_file(&mut self, fd: c_int, size: usize) -> bool {
        self.unmap();
        // SAFETY: a fresh shared mapping of our own fd; checked below.
        let p = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                size,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_SHARED,
                fd,
                0,
            )
        };
        if p == libc::MAP_FAILED {
            self.cap = 0;
            return false;
        }
        self.map = p.cast();
        self.cap = size;
        true
    }
}

fn file_size(fd: c_int) -> usize {
    // SAFETY: fstat into a local.
    unsafe {
        let mut st: libc::stat = std::mem::zeroed();
        if libc::syscall(libc::SYS_fstat, fd, &mut st as *mut libc::stat) != 0 {
            return 0;
        }
        st.st_size.max(0) as usize
    }
}

/// The offset after the last non-zero byte among the first `size` bytes of the file.
fn used_length(fd: c_int, size: usize) -> usize {
    let mut end = size;
    let mut block = [0u8; 4096];
    while end > 0 {
        let start = end.saturating_sub(block.len());
        let want = end - start;
        // SAFETY: pread into our block, at most its length.
        let got = unsafe {
            libc::syscall(
                libc::SYS_pread64,
                fd,
                block.as_mut_ptr(),
                want,
                start as libc::off_t,
            )
        };
        if got != want as i64 {
            return end; // cannot tell: keep what the size says
        }
        if let Some(i) = block[..want].iter().rposition(|b| *b != 0) {
            return start + i + 1;
        }
        end = start;
    }
    0
}
