//! `routes!` given a function without a route attribute: rustc resolves the
//! name before any trait of timebox's is asked, so its own error is the one
//! (the `routes!` docs name the fix: add the attribute).

async fn health() -> &'static str {
    "ok"
}

fn main() {
    let _routes: timebox::server::Routes<()> = timebox::routes![health];
}
