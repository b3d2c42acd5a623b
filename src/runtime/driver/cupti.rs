//! libcupti's one call made before PC sampling exists: `cuptiGetVersion`, on a library
//! loaded by path (see `runtime::cupti` for where the path comes from).

use std::path::Path;

use crate::runtime::cupti::CuptiError;

/// Loads `path` and returns `cuptiGetVersion`'s answer (CUPTI's API version number).
pub(crate) fn api_version(path: &Path) -> Result<u32, CuptiError> {
    // SAFETY: loading a shared library runs its initialisers; libcupti's only register
    // itself. The symbol has CUPTI's documented C signature
    // `CUptiResult cuptiGetVersion(uint32_t *version)`, and `v` outlives the call.
    unsafe {
        let lib = libloading::Library::new(path).map_err(CuptiError::Load)?;
        let f: libloading::Symbol<unsafe extern "C" fn(*mut u32) -> i32> =
            lib.get(b"cuptiGetVersion\0").map_err(CuptiError::Load)?;
        let mut v = 0u32;
        match f(&mut v) {
            0 => Ok(v),
            code => Err(CuptiError::Version(code)),
        }
    }
}
