//! A handler's hidden type shares the handler's name: a module of that name
//! beside it clashes, and rustc says so.

mod users {
    pub fn count() -> usize {
        0
    }
}

#[timebox::get("/users")]
async fn users() -> String {
    users::count().to_string()
}

fn main() {}
