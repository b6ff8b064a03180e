use timebox::get;

#[get("/users", timeout_ms = 0)]
async fn users() -> &'static str {
    "[]"
}

fn main() {
    // The attribute's error is the only one: `routes!` still finds the route.
    let _routes: timebox::server::Routes<()> = timebox::routes![users];
}
