#![allow(dead_code)]

use timebox::get;

#[get("/users")]
async fn generic<T: Default + ToString>() -> String {
    T::default().to_string()
}

fn main() {}
