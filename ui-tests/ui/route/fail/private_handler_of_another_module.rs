mod api {
    use timebox::get;

    #[get("/users")]
    async fn users() -> &'static str {
        "[]"
    }
}

fn main() {
    let _routes: timebox::server::Routes<()> = timebox::routes![api::users];
}
