//! Remembers PROJ's name searches that found nothing, so that a batch of
//! outputs in a coordinate system without an EPSG code does not search
//! PROJ's database once per file.
//!
//! GDAL's GeoTIFF writer looks the datum's name up in PROJ's database
//! (`proj_create_from_name`, approximate match) every time it writes an
//! output's GeoTIFF keys. For a datum that has no EPSG entry (the bundled
//! MODIS map's "Unknown based on Clarke 1866 ellipsoid") the search finds
//! nothing, and an approximate search compares the name with every datum
//! name and alias in the database: the costliest step of writing a small
//! GeoTIFF. The database does not change while we run, so the same search
//! finds nothing again.
//!
//! This module defines `proj_create_from_name` itself; `build.rs` exports
//! it from our binaries, so that the dynamic loader binds libgdal's calls
//! to it (the executable comes first in the global lookup scope). It calls
//! PROJ's own function (found with `dlsym(RTLD_NEXT)`) and, when a search
//! with no extra options returned an empty list, remembers its arguments.
//! The same search again gets an empty list from PROJ's own function
//! asked for an empty name without approximate match, which PROJ answers
//! without a query: a real, empty list, as the caller would have got.
//! Searches that found something are never cached, so every object GDAL
//! sees still comes from PROJ.

use std::collections::HashSet;
use std::ffi::{CStr, c_char, c_int, c_void};
use std::sync::{Mutex, OnceLock};

/// PROJ's `proj_create_from_name` (proj.h).
type CreateFromName = unsafe extern "C" fn(
    *mut c_void,
    *const c_char,
    *const c_char,
    *const c_int,
    usize,
    c_int,
    usize,
    *const *const c_char,
) -> *mut c_void;

/// PROJ's `proj_list_get_count` (proj.h).
type ListCount = unsafe extern "C" fn(*const c_void) -> c_int;

/// One search's arguments, less the thread's context (every context of the
/// process reads the same database).
#[derive(PartialEq, Eq, Hash)]
struct Search {
    authority: Option<Vec<u8>>,
    name: Vec<u8>,
    types: Vec<c_int>,
    approximate: bool,
    limit: usize,
}

/// PROJ's own functions, when PROJ is loaded.
struct Proj {
    create_from_name: CreateFromName,
    list_count: ListCount,
}

fn proj() -> Option<&'static Proj> {
    static PROJ: OnceLock<Option<Proj>> = OnceLock::new();
    PROJ.get_or_init(|| {
        // SAFETY: dlsym with RTLD_NEXT and NUL-terminated names; a found
        // address is PROJ's function of the signature proj.h declares.
        unsafe {
            let create = libc::dlsym(libc::RTLD_NEXT, c"proj_create_from_name".as_ptr());
            let count = libc::dlsym(libc::RTLD_NEXT, c"proj_list_get_count".as_ptr());
            if create.is_null() || count.is_null() {
                return None;
            }
            Some(Proj {
                create_from_name: std::mem::transmute::<*mut c_void, CreateFromName>(create),
                list_count: std::mem::transmute::<*mut c_void, ListCount>(count),
            })
        }
    })
    .as_ref()
}

/// The searches that found nothing so far.
fn found_nothing() -> &'static Mutex<HashSet<Search>> {
    static EMPTY: OnceLock<Mutex<HashSet<Search>>> = OnceLock::new();
    EMPTY.get_or_init(Default::default)
}

/// The arguments of a search that may be remembered: none with options
/// (PROJ's options may change what a search finds).
///
/// # Safety
/// As [`proj_create_from_name`].
unsafe fn search_of(
    auth_name: *const c_char,
    searched_name: *const c_char,
    types: *const c_int,
    types_count: usize,
    approximate_match: c_int,
    limit_result_count: usize,
    options: *const *const c_char,
) -> Option<Search> {
    if !options.is_null() || searched_name.is_null() {
        return None;
    }
    // SAFETY: the caller's contract: NUL-terminated strings, `types_count` types.
    unsafe {
        Some(Search {
            authority: (!auth_name.is_null())
                .then(|| CStr::from_ptr(auth_name).to_bytes().to_vec()),
            name: CStr::from_ptr(searched_name).to_bytes().to_vec(),
            types: if types.is_null() {
                Vec::new()
            } else {
                std::slice::from_raw_parts(types, types_count).to_vec()
            },
            approximate: approximate_match != 0,
            limit: limit_result_count,
        })
    }
}

/// PROJ's `proj_create_from_name`, with the searches that found nothing
/// remembered (the module doc says why).
///
/// # Safety
/// The contract of PROJ's function: `searched_name` a NUL-terminated
/// string, `auth_name` one or null, `types` `types_count` values or null.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn proj_create_from_name(
    ctx: *mut c_void,
    auth_name: *const c_char,
    searched_name: *const c_char,
    types: *const c_int,
    types_count: usize,
    approximate_match: c_int,
    limit_result_count: usize,
    options: *const *const c_char,
) -> *mut c_void {
    let Some(proj) = proj() else {
        return std::ptr::null_mut();
    };
    // SAFETY: the caller's arguments, passed on to PROJ's own function
    // under the same contract; an empty name and null options are valid.
    unsafe {
        let search = search_of(
            auth_name,
            searched_name,
            types,
            types_count,
            approximate_match,
            limit_result_count,
            options,
        );
        let known_empty = search.as_ref().is_some_and(|s| {
            found_nothing()
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .contains(s)
        });
        if known_empty {
            return (proj.create_from_name)(
                ctx,
                auth_name,
                c"".as_ptr(),
                types,
                types_count,
                0,
                limit_result_count,
                std::ptr::null(),
            );
        }
        let list = (proj.create_from_name)(
            ctx,
            auth_name,
            searched_name,
            types,
            types_count,
            approximate_match,
            limit_result_count,
            options,
        );
        if let Some(search) = search
            && !list.is_null()
            && (proj.list_count)(list) == 0
        {
            found_nothing()
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .insert(search);
        }
        list
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Searches PROJ's datums by name, as GDAL's GeoTIFF writer does, and
    /// returns how many it found.
    fn datums_named(name: &std::ffi::CStr) -> c_int {
        let datum: c_int = 3; // PJ_TYPE_GEODETIC_REFERENCE_FRAME
        let proj = proj().expect("PROJ is loaded with GDAL");
        // SAFETY: NUL-terminated strings and one type, as PROJ's contract asks;
        // the list is PROJ's and freed by PROJ.
        unsafe {
            let list = proj_create_from_name(
                std::ptr::null_mut(),
                c"EPSG".as_ptr(),
                name.as_ptr(),
                &datum,
                1,
                1,
                10,
                std::ptr::null(),
            );
            assert!(!list.is_null());
            let found = (proj.list_count)(list);
            let destroy = libc::dlsym(libc::RTLD_NEXT, c"proj_list_destroy".as_ptr());
            let destroy: unsafe extern "C" fn(*mut c_void) = std::mem::transmute(destroy);
            destroy(list);
            found
        }
    }

    fn remembered(name: &str) -> bool {
        found_nothing()
            .lock()
            .unwrap()
            .iter()
            .any(|s| s.name == name.as_bytes() && s.approximate)
    }

    #[test]
    fn a_fruitless_search_is_remembered_and_answered_empty_again() {
        let name = c"Unknown based on Clarke 1866 ellipsoid";
        assert_eq!(datums_named(name), 0);
        assert!(remembered("Unknown based on Clarke 1866 ellipsoid"));
        assert_eq!(datums_named(name), 0);
    }

    #[test]
    fn a_search_that_finds_something_is_not_remembered() {
        assert!(datums_named(c"World Geodetic System 1984") > 0);
        assert!(!remembered("World Geodetic System 1984"));
        assert!(datums_named(c"World Geodetic System 1984") > 0);
    }
}
