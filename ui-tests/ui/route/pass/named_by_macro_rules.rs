//! A handler whose name, arguments and return type come from a
//! `macro_rules!` invocation, while the attribute is written in the
//! macro's body: the expansion's own variables keep one hygiene.

use axum::extract::Path;
use timebox::get;

macro_rules! handler {
    ($name:ident, $arg:ident: $ty:ty, $out:ty) => {
        #[get("/users/{id}", timeout_ms = 5000)]
        async fn $name(Path($arg): Path<$ty>) -> $out {
            $arg.to_string()
        }
    };
}

handler!(user, id: u32, String);

fn main() {
    let _routes: timebox::server::Routes<()> = timebox::routes![user];
}
