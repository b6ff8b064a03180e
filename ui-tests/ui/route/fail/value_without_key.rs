use timebox::get;

#[get("/users", 5000)]
async fn users() -> &'static str {
    "[]"
}

fn main() {}
