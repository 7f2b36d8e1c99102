//! Checking the user's GDAL creation options (`--co KEY=VALUE`) against
//! the driver that will write the output, before any work is done: GDAL
//! itself would only warn about an unknown key or a bad value, and write
//! the file without it.

use gdal::DriverManager;
use mapfilter_core::bail;
use mapfilter_core::error::{Error, Result, Setting};
use std::ffi::{CStr, CString, c_char, c_void};

/// Parses one `--co` value, `KEY=VALUE`.
pub fn parse_key_value(s: &str) -> std::result::Result<(String, String), String> {
    match s.split_once('=') {
        Some((k, v)) if !k.trim().is_empty() => Ok((k.trim().to_string(), v.to_string())),
        _ => Err(format!(
            "`{s}` is not KEY=VALUE (for example {})",
            Setting::Co.is("BLOCKXSIZE=512")
        )),
    }
}

/// Refuses `options` unless `driver` (a GDAL short name) lists every key
/// and accepts every value (types, ranges, enumerations), by GDAL's own
/// check of its creation option list.
pub fn check(driver: &str, options: &[(String, String)]) -> Result<()> {
    if options.is_empty() {
        return Ok(());
    }
    crate::errors::install();
    let handle = DriverManager::get_driver_by_name(driver)
        .map_err(|_| Error::usage(format!("GDAL has no {driver} driver")))?;
    let mut strings = Vec::with_capacity(options.len());
    for (k, v) in options {
        let text = CString::new(format!("{k}={v}")).map_err(|_| {
            Error::usage(format!(
                "{}: holds a NUL byte",
                Setting::Co.is(format!("{k}={v}"))
            ))
            .hint("remove it")
        })?;
        strings.push(text);
    }
    let mut list: Vec<*mut c_char> = strings.iter().map(|s| s.as_ptr() as *mut _).collect();
    list.push(std::ptr::null_mut());
    let mut complaints: Vec<String> = Vec::new();
    // SAFETY: the handler pushed is this thread's only while the check runs
    // and gets `complaints` (which outlives it) as its user data; the list
    // is NULL-terminated and its strings outlive the call.
    let valid = unsafe {
        gdal_sys::CPLPushErrorHandlerEx(
            Some(collect),
            &mut complaints as *mut Vec<String> as *mut c_void,
        );
        let valid =
            gdal_sys::GDALValidateCreationOptions(handle.c_driver(), list.as_ptr() as _) != 0;
        gdal_sys::CPLPopErrorHandler();
        valid
    };
    if valid && complaints.is_empty() {
        return Ok(());
    }
    let why = complaints
        .first()
        .cloned()
        .unwrap_or_else(|| "GDAL refuses it".to_string());
    bail!(
        usage,
        format!("{}: {}", Setting::Co, why.trim_end_matches('.')),
        hint = format!("`gdalinfo --format {driver}` lists the creation options {driver} takes")
    )
}

/// Keeps GDAL's messages in the `Vec<String>` given as user data.
unsafe extern "C" fn collect(_class: gdal_sys::CPLErr::Type, _num: i32, msg: *const c_char) {
    // SAFETY: called by GDAL while `check`'s handler is pushed, with the
    // user data `check` gave and a NUL-terminated message.
    unsafe {
        let sink = gdal_sys::CPLGetErrorHandlerUserData() as *mut Vec<String>;
        if !sink.is_null() && !msg.is_null() {
            (*sink).push(CStr::from_ptr(msg).to_string_lossy().into_owned());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn opts(pairs: &[(&str, &str)]) -> Vec<(String, String)> {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    #[test]
    fn known_keys_and_values_pass_and_others_are_refused() {
        check("GTiff", &opts(&[("BLOCKXSIZE", "512"), ("PREDICTOR", "2")])).unwrap();
        check("COG", &opts(&[("BLOCKSIZE", "512"), ("PREDICTOR", "YES")])).unwrap();
        for (driver, key, value) in [
            ("GTiff", "NO_SUCH_KEY", "1"),
            ("COG", "BLOCKXSIZE", "512"),
            ("GTiff", "COMPRESS", "SNAPPY"),
        ] {
            let err = check(driver, &opts(&[(key, value)]))
                .unwrap_err()
                .to_string();
            assert!(
                err.starts_with(&Setting::Co.to_string())
                    && err.contains("gdalinfo --format")
                    && !err.contains('\n'),
                "{err}"
            );
        }
    }

    #[test]
    fn key_value_parsing() {
        assert_eq!(
            parse_key_value("TILED=YES").unwrap(),
            ("TILED".to_string(), "YES".to_string())
        );
        assert_eq!(parse_key_value("A=b=c").unwrap().1, "b=c");
        assert!(parse_key_value("TILED").is_err());
        assert!(parse_key_value("=YES").is_err());
    }
}
