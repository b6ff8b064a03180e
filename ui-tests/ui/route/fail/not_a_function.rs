#![allow(dead_code)]

use timebox::get;

#[get("/users")]
struct NotAFunction {
    users: Vec<String>,
}

fn main() {}
