use timebox::get;

#[get("/files/*")]
async fn files() -> &'static str {
    "[]"
}

fn main() {}
