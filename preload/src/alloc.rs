//! The LD's own memory: a lock-free allocator over `mmap`, the Rust global allocator of this
//! library only (the program keeps libc's malloc).
//!
//! Why: the LD runs inside the program's signal handlers. A SIGCHLD handler that calls
//! `waitpid` (every shell does) reaches our hook, which records the reap; if the signal
//! interrupted the program inside `malloc`, an LD that allocated from libc's heap re-entered
//! `malloc` and corrupted it (bash aborted with "malloc assertion failure in sysmalloc" in
//! about one shell-script record in thirty; `tests/progs/sig_malloc.c` crashed 2 records of 5).
//! With its own heap, LD code is safe wherever the program is interrupted, across `fork` (no
//! lock can be held by a thread that does not exist in the child) and on any thread.
//!
//! Blocks come in power-of-two classes from 16 bytes to 1 MiB, carved from 4 MiB chunks and
//! kept, once freed, on one lock-free stack per class (never returned to the system); larger
//! blocks are mapped and unmapped one by one. A stack's head carries a 16-bit tag beside the
//! 48-bit address, so that a pop interrupted by a handler that popped and pushed the same block
//! fails its compare-and-swap instead of corrupting the stack.

use std::alloc::{GlobalAlloc, Layout};
use std::ptr;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering::*};

/// log2 of the smallest class (16 bytes: a free block holds the stack's link).
const MIN_SHIFT: u32 = 4;
/// log2 of the largest class; larger blocks are mapped on their own.
const MAX_SHIFT: u32 = 20;
const CLASSES: usize = (MAX_SHIFT - MIN_SHIFT + 1) as usize;
/// What is mapped at a time for carving, aligned to its own size.
const CHUNK: usize = 4 << 20;
const PAGE: usize = 4096;
/// The address bits of a stack head; the bits above hold the tag.
const ADDRESS: u64 = (1 << 48) - 1;
const TAG_ONE: u64 = 1 << 48;

/// The LD's allocator (see the module's documentation).
pub struct LdHeap;

#[global_allocator]
static HEAP: LdHeap = LdHeap;

/// Freed blocks, one tagged stack per class.
static FREE: [AtomicU64; CLASSES] = [const { AtomicU64::new(0) }; CLASSES];
/// The next byte to carve in the current chunk; 0 before the first chunk. Never the base of a
/// chunk (a chunk is installed with its first block already carved), so the chunk a value
/// belongs to is that of the byte before it.
static NEXT: AtomicUsize = AtomicUsize::new(0);

/// The class of a block of `size` bytes aligned to `align`, or `None` for a block mapped on
/// its own.
fn class_of(size: usize, align: usize) -> Option<usize> {
    let need = size
        .max(align)
        .max(1 << MIN_SHIFT)
        .checked_next_power_of_two()?;
    let shift = need.trailing_zeros();
    (shift <= MAX_SHIFT && align <= PAGE).then(|| (shift - MIN_SHIFT) as usize)
}

fn class_size(class: usize) -> usize {
    1 << (class as u32 + MIN_SHIFT)
}

fn pop(list: &AtomicU64) -> *mut u8 {
    let mut head = list.load(Acquire);
    loop {
        let block = (head & ADDRESS) as usize;
        if block == 0 {
            return ptr::null_mut();
        }
        // SAFETY: blocks are never unmapped; if another context took this block meanwhile,
        // the value read is garbage and the tag makes the exchange below fail.
        let next = unsafe { (*(block as *const AtomicU64)).load(Relaxed) } & ADDRESS;
        let new = ((head & !ADDRESS).wrapping_add(TAG_ONE)) | next;
        match list.compare_exchange_weak(head, new, AcqRel, Acquire) {
            Ok(_) => return block as *mut u8,
            Err(now) => head = now,
        }
    }
}

fn push(list: &AtomicU64, block: *mut u8) {
    let mut head = list.load(Relaxed);
    loop {
        // SAFETY: the block is ours (being freed), at least 16 bytes and 8-aligned.
        unsafe { (*(block as *const AtomicU64)).store(head & ADDRESS, Relaxed) };
        let new = ((head & !ADDRESS).wrapping_add(TAG_ONE)) | block as u64;
        match list.compare_exchange_weak(head, new, AcqRel, Relaxed) {
            Ok(_) => return,
            Err(now) => head = now,
        }
    }
}

/// Maps `len` bytes (a multiple of the page), or null.
fn map(len: usize) -> *mut u8 {
    // SAFETY: an anonymous private mapping; no pointer argument.
    let p = unsafe {
        libc::mmap(
            ptr::null_mut(),
            len,
            libc::PROT_READ | libc::PROT_WRITE,
            libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
            -1,
            0,
        )
    };
    if p == libc::MAP_FAILED || (p as u64) > ADDRESS {
        return ptr::null_mut();
    }
    p.cast()
}

/// Unmaps `len` bytes at `p` (both page multiples), as mapped by [`map`].
fn unmap(p: *mut u8, len: usize) {
    if len > 0 {
        // SAFETY: a range of one of our mappings, no longer used.
        unsafe { libc::munmap(p.cast(), len) };
    }
}

/// Maps `len` bytes aligned to `align` (a power of two at least a page), trimming the rest.
fn map_aligned(len: usize, align: usize) -> *mut u8 {
    let Some(over) = len.checked_add(align) else {
        return ptr::null_mut();
    };
    let raw = map(over);
    if raw.is_null() {
        return raw;
    }
    let start = (raw as usize).next_multiple_of(align);
    let head = start - raw as usize;
    unmap(raw, head);
    unmap((start + len) as *mut u8, over - head - len);
    start as *mut u8
}

/// Carves `size` bytes aligned to `align` from the current chunk, mapping a new one when it is
/// used up.
fn carve(size: usize, align: usize) -> *mut u8 {
    let mut cur = NEXT.load(Acquire);
    loop {
        if cur != 0 {
            let end = ((cur - 1) & !(CHUNK - 1)) + CHUNK;
            let start = cur.next_multiple_of(align);
            if start + size <= end {
                match NEXT.compare_exchange_weak(cur, start + size, AcqRel, Acquire) {
                    Ok(_) => return start as *mut u8,
                    Err(now) => {
                        cur = now;
                        continue;
                    }
                }
            }
        }
        let chunk = map_aligned(CHUNK, CHUNK);
        if chunk.is_null() {
            return chunk;
        }
        match NEXT.compare_exchange(cur, chunk as usize + size, AcqRel, Acquire) {
            Ok(_) => return chunk,
            Err(now) => {
                // Another context installed a chunk meanwhile: carve from it.
                unmap(chunk, CHUNK);
                cur = now;
            }
        }
    }
}

/// The length of the mapping of a block that has no class.
fn mapped_len(size: usize) -> usize {
    size.max(1).next_multiple_of(PAGE)
}

// SAFETY: every block returned is at least `layout.size()` bytes, aligned to `layout.align()`,
// and owned by the caller until given back; blocks are never handed out twice.
unsafe impl GlobalAlloc for LdHeap {
    /// A block for `layout`, or null.
    ///
    /// # Safety
    /// As `GlobalAlloc::alloc`: `layout` has a non-zero size.
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        match class_of(layout.size(), layout.align()) {
            Some(class) => {
                let block = pop(&FREE[class]);
                if !block.is_null() {
                    return block;
                }
                let size = class_size(class);
                carve(size, size.min(PAGE))
            }
            None if layout.align() <= PAGE => map(mapped_len(layout.size())),
            None => map_aligned(mapped_len(layout.size()), layout.align()),
        }
    }

    /// Gives `block` back.
    ///
    /// # Safety
    /// As `GlobalAlloc::dealloc`: `block` came from this allocator with `layout`.
    unsafe fn dealloc(&self, block: *mut u8, layout: Layout) {
        match class_of(layout.size(), layout.align()) {
            Some(class) => push(&FREE[class], block),
            None => unmap(block, mapped_len(layout.size())),
        }
    }

    /// `block` grown or shrunk to `new_size`, in place when it stays in its class.
    ///
    /// # Safety
    /// As `GlobalAlloc::realloc`: `block` came from this allocator with `layout`, and
    /// `new_size` is non-zero and does not overflow `isize` when rounded to the alignment.
    unsafe fn realloc(&self, block: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        let old = class_of(layout.size(), layout.align());
        if old.is_some() && old == class_of(new_size, layout.align()) {
            return block;
        }
        if old.is_none() && layout.align() <= PAGE && class_of(new_size, layout.align()).is_none() {
            // SAFETY: our own mapping of the old length; MREMAP_MAYMOVE keeps the contents.
            let p = unsafe {
                libc::mremap(
                    block.cast(),
                    mapped_len(layout.size()),
                    mapped_len(new_size),
                    libc::MREMAP_MAYMOVE,
                )
            };
            return if p == libc::MAP_FAILED || (p as u64) > ADDRESS {
                ptr::null_mut()
            } else {
                p.cast()
            };
        }
        // SAFETY: a valid layout: the caller promises new_size rounded up to the alignment does
        // not overflow isize.
        let new_layout = unsafe { Layout::from_size_align_unchecked(new_size, layout.align()) };
        // SAFETY: as for alloc.
        let new = unsafe { self.alloc(new_layout) };
        if !new.is_null() {
            // SAFETY: both blocks are at least this long and do not overlap.
            unsafe { ptr::copy_nonoverlapping(block, new, layout.size().min(new_size)) };
            // SAFETY: the caller's block, allocated with `layout`.
            unsafe { self.dealloc(block, layout) };
        }
        new
    }
}
