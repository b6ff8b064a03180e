use timebox::get;

macro_rules! handler {
    ($timeout:literal) => {
        #[get("/users", timeout_ms = $timeout)]
        async fn users() -> &'static str {
            "[]"
        }
    };
}

handler!(0);

fn main() {}
