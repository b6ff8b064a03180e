use timebox::get;

#[get("users", timeout_ms = 0)]
async fn users() -> &'static str {
    "[]"
}

fn main() {}
