//! Compile-time checks of timebox's macros.
