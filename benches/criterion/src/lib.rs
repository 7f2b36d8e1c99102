//! Nothing but a home for the criterion benches in `benches/` (fast
//! methods against naive, the host naive method): they measure
//! mapfilter-core's methods in memory, `cargo bench -p mapfilter-benches`.
//! The crate exists so that the test build does not compile criterion.
