//! Helpers shared by the integration tests.

#![allow(dead_code, unreachable_pub)] // each test file uses a different part

pub mod chain;
pub mod child;
pub mod http;
pub mod upstream;
