use timebox::get;

#[get(path = "/users")]
async fn users() -> &'static str {
    "[]"
}

fn main() {}
