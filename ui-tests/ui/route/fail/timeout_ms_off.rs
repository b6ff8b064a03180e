use timebox::get;

#[get("/users", timeout_ms = "off")]
async fn users() -> &'static str {
    "[]"
}

fn main() {}
