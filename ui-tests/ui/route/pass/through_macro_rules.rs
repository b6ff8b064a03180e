use timebox::get;

macro_rules! handler {
    ($timeout:literal) => {
        #[get("/users", timeout_ms = $timeout)]
        async fn users() -> &'static str {
            "[]"
        }
    };
}

handler!(5000);

fn main() {
    let _routes: timebox::server::Routes<()> = timebox::routes![users];
}
