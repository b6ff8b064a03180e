use timebox::get;

#[get("/users", timeout = 0)]
async fn users() -> &'static str {
    "[]"
}

fn main() {}
