#![allow(dead_code)]

use timebox::get;

const USERS: &str = "/users";

#[get(USERS)]
async fn path_not_a_string() -> &'static str {
    "users"
}

fn main() {}
