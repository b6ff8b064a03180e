#![allow(dead_code)]

use timebox::get;

struct Users;

impl Users {
    #[get("/users")]
    async fn takes_self(self) -> &'static str {
        "users"
    }
}

fn main() {}
