#![allow(dead_code)]

use timebox::get;

#[get("/users", timeout_ms = 18446744073709551616)]
async fn timeout_ms_out_of_range() -> &'static str {
    "users"
}

fn main() {}
