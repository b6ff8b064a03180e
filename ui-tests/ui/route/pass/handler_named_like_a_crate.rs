//! A handler may share its name with a crate or a module in scope: its
//! companion has a name of its own.

use timebox::get;
use tokio::runtime::Builder;

mod users {
    pub fn count() -> usize {
        0
    }
}

#[get("/tokio")]
async fn tokio() -> &'static str {
    "tokio"
}

#[get("/users")]
async fn users() -> String {
    users::count().to_string()
}

fn main() {
    let _builder = Builder::new_current_thread();
    let _routes: timebox::server::Routes<()> = timebox::routes![tokio, users];
}
