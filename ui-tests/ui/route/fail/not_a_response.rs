#![allow(dead_code)]

use timebox::get;

struct Users;

#[get("/users")]
async fn not_a_response() -> Users {
    Users
}

fn main() {}
