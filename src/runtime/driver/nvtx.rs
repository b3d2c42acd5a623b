//! NVTX ranges without a link-time dependency: when an NVTX library (`libnvToolsExt`) can be
//! opened at run time, dispatch phases (upload, JIT, launch, pipeline steps and fused groups,
//! readback) are pushed and popped as named ranges, so an Nsight Systems timeline of a
//! vyrescope run shows its structure. Without the library every call is a no-op. Setting
//! `VYRESCOPE_NVTX=0` turns the lookup off.

use std::ffi::{c_char, c_int, CString};
use std::sync::OnceLock;

type PushFn = unsafe extern "C" fn(*const c_char) -> c_int;
type PopFn = unsafe extern "C" fn() -> c_int;

struct Nvtx {
    push: PushFn,
    pop: PopFn,
    // Keeps the library mapped for as long as the function pointers are used (the process).
    _lib: libloading::Library,
}

const NAMES: &[&str] = &[
    "libnvToolsExt.so.1",
    "libnvToolsExt.so",
    "nvToolsExt64_1.dll",
];

fn nvtx() -> Option<&'static Nvtx> {
    static NVTX: OnceLock<Option<Nvtx>> = OnceLock::new();
    NVTX.get_or_init(|| {
        if std::env::var_os("VYRESCOPE_NVTX").is_some_and(|v| v == "0") {
            return None;
        }
        NAMES.iter().find_map(|name| {
            // Safety: opening the NVTX library runs its initialisers, which have no
            // preconditions; the symbols are looked up with their documented C signatures
            // (`int nvtxRangePushA(const char*)`, `int nvtxRangePop(void)`) and used only
            // while `_lib` keeps the library loaded.
            unsafe {
                let lib = libloading::Library::new(*name).ok()?;
                let push = *lib.get::<PushFn>(b"nvtxRangePushA\0").ok()?;
                let pop = *lib.get::<PopFn>(b"nvtxRangePop\0").ok()?;
                Some(Nvtx {
                    push,
                    pop,
                    _lib: lib,
                })
            }
        })
    })
    .as_ref()
}

/// True when an NVTX library was found (ranges are recorded).
pub(crate) fn available() -> bool {
    nvtx().is_some()
}

/// An open NVTX range; it is popped when dropped.
#[must_use = "the range ends when this guard is dropped"]
pub(crate) struct Range {
    open: bool,
}

/// Pushes a range called `name` (no-op without an NVTX library).
pub(crate) fn range(name: &str) -> Range {
    let Some(n) = nvtx() else {
        return Range { open: false };
    };
    let Ok(text) = CString::new(name.replace('\0', " ")) else {
        return Range { open: false };
    };
    // Safety: a valid NUL-terminated string, alive for the call (NVTX copies it).
    let depth = unsafe { (n.push)(text.as_ptr()) };
    Range { open: depth >= 0 }
}

impl Drop for Range {
    fn drop(&mut self) {
        if self.open {
            if let Some(n) = nvtx() {
                // Safety: pops the range this guard pushed.
                unsafe {
                    (n.pop)();
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn ranges_are_harmless_without_the_library() {
        // Whether or not the library exists here, pushing and popping never fails or panics.
        let outer = super::range("outer");
        {
            let _inner = super::range("inner\0with nul");
        }
        drop(outer);
        let _ = super::available();
    }
}
