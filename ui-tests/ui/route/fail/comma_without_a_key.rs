use timebox::get;

#[get("/users", , timeout_ms = 5000)]
async fn users() -> &'static str {
    "[]"
}

fn main() {}
