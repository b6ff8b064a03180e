use std::rc::Rc;

use timebox::get;

#[get("/users")]
async fn users() -> &'static str {
    let count = Rc::new(0);
    tokio::task::yield_now().await;
    let _ = count;
    "[]"
}

fn main() {
    let _routes: timebox::server::Routes<()> = timebox::routes![users];
}
