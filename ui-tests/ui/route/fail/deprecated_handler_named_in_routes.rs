//! A deprecated handler warns where `routes!` names it, with its note.

#![deny(deprecated)]

use timebox::get;

#[deprecated = "use `version`"]
#[get("/old-version")]
async fn old_version() -> &'static str {
    "0.0.0"
}

fn main() {
    let _routes: timebox::server::Routes<()> = timebox::routes![old_version];
}
