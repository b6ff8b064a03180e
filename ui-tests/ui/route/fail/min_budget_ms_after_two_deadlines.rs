//! Both deadline keys set: that is the one error; `min_budget_ms` is not
//! compared with either.

use timebox::get;

#[get("/users", timeout_ms = 5000, timeout = "off", min_budget_ms = 50)]
async fn users() -> &'static str {
    "[]"
}

fn main() {}
