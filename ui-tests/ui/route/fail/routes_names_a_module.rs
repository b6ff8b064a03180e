//! `routes!` given a module rather than a handler.

mod users {}

fn main() {
    let _routes: timebox::server::Routes<()> = timebox::routes![users];
}
