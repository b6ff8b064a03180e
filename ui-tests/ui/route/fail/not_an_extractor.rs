use timebox::get;

struct Config;

#[get("/users")]
async fn users(_config: Config) -> &'static str {
    "[]"
}

fn main() {
    let _routes: timebox::server::Routes<()> = timebox::routes![users];
}
