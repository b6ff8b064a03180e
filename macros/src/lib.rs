//! Implementation detail of timebox: its attribute macros.
//!
//! Use them through the `timebox` crate, which re-exports them and provides
//! the runtime their expansions call.

use proc_macro::TokenStream;

mod errors;
mod expr;
mod route;
mod sim_test;

use route::Method;

/// Runs an async test deterministically in virtual time, with a seed.
///
/// The function takes exactly one argument, a `timebox::sim::Sim`, and may
/// return `()` or a `Result<(), E>`. It runs on a current-thread runtime whose
/// clock is paused at the start. On failure the test prints a line that
/// replays the same seed.
///
/// Keys:
/// - `seed = N`: run with seed `N` (an integer literal).
/// - `seeds = N`: run the body once for each of `N` seeds, `base..base + N`,
///   where `base` is `TIMEBOX_SIM_SEED` or 0.
///
/// Without either, the seed is `TIMEBOX_SIM_SEED` (decimal or `0x` hex), or 0.
/// See `timebox::sim` for the replay line and the liveness bound. It needs
/// timebox's `sim` feature, enabled from `[dev-dependencies]`.
///
/// ```
/// use timebox::sim::Sim;
///
/// #[timebox::sim_test(seeds = 8)]
/// async fn retries_replay(sim: Sim) {
///     draws_replay(&sim).await;
/// }
///
/// // A plain fn, run below too, on a runtime whose clock is paused as
/// // `#[sim_test]`'s is: a seed's draws are the same every time.
/// async fn draws_replay(sim: &Sim) {
///     let replay = Sim::new(sim.seed());
///     let drawn = sim.entropy().uniform(1..=1_000_000);
///     assert_eq!(drawn, replay.entropy().uniform(1..=1_000_000));
/// }
///
/// #[tokio::main(flavor = "current_thread", start_paused = true)]
/// async fn main() {
///     draws_replay(&Sim::new(0)).await;
/// }
/// ```
#[proc_macro_attribute]
pub fn sim_test(args: TokenStream, item: TokenStream) -> TokenStream {
    sim_test::sim_test(args.into(), item.into()).into()
}

/// Makes an `async fn` the handler of `GET path`, with a route deadline.
///
/// The handler is an ordinary axum handler (extractors in, each taken by
/// value; `IntoResponse` out), a free `async fn` (not one in an `impl`), and stays callable
/// exactly as written, so unit tests can call it. Beside it goes a hidden
/// type of the same name, which `routes!` finds: the handler cannot share
/// its name with a module or a type of its module, or with a crate a path
/// there starts from (see `timebox::routes!`).
/// `timebox::routes![..]` collects it into a `timebox::server::Routes`, and
/// `Routes::into_router(&config)` mounts it under its deadline rule (the
/// concurrency limit is `timebox::server::TimeboxLayer`'s, around the
/// router).
///
/// The path is a string literal that starts with `/`, in axum's syntax
/// (`"/users/{id}"`, `"/files/{*rest}"`); a path axum's router would refuse
/// when the route is mounted (`"/reports/{id}.csv"`, a catch-all before the
/// end, axum 0.7's `:id`), or that no request's path could match (one that
/// holds `?`, `#`, `<`, `>`, a backtick, or ASCII whitespace or control
/// characters outside its captures), is a compile error that says why. Keys, at most one of the first two:
/// - `timeout_ms = N`: the route's deadline is `N` milliseconds (an integer
///   literal, at least 1), instead of `server.timeouts.request_timeout_ms`.
/// - `timeout = "off"`: the route has no deadline.
/// - `min_budget_ms = N`: the time the handler needs (at least 1, below the
///   route's own `timeout_ms`; not with `timeout = "off"`). A request with
///   less time left is refused before extraction when
///   `server.admission.deadline_check` is `enforce`; without the key the
///   route learns its median from its successful requests.
///
/// Without a key the route takes `server.timeouts.request_timeout_ms` (none
/// when unset or 0). A `GET` deadline also covers `HEAD` on the same path.
/// When the deadline passes, the handler (extractors included) is dropped
/// and the client gets `503 Service Unavailable` with `Retry-After`. A
/// handler error whose `source()` chain holds a deadline error becomes
/// `504 Gateway Timeout`, except a pool wait the deadline cut short
/// (`timebox::db`), which answers 503 with `Retry-After` (the wait ran
/// out, not the work). The error type is read from the return type as
/// written: behind `-> impl IntoResponse` it is hidden, and the error
/// answers as its own `IntoResponse` says. A `thiserror` variant that
/// holds a `DeadlineExceeded` itself must make it the source, with a
/// message of its own: `#[error("timed out")] Deadline(#[from]
/// DeadlineExceeded)`; marked `#[error(transparent)]`, the variant hands
/// on the held error's own source (none), not the error.
///
/// The handler mounts on a router of every state its extractors accept: one
/// with a `State<T>` argument on `Router<T>` (or any state `T` can be taken
/// from with `FromRef`), one with only stateless extractors on any router.
///
/// ```
/// use axum::extract::{Path, State};
/// use axum::Json;
/// use timebox::config::Config;
/// use timebox::get;
///
/// #[derive(Clone)]
/// struct App;
///
/// #[get("/users/{id}", timeout_ms = 2000)]
/// async fn user(State(app): State<App>, Path(id): Path<u64>) -> Json<u64> {
///     Json(id)
/// }
///
/// #[get("/export", timeout = "off")]
/// async fn export() -> &'static str {
///     "everything"
/// }
///
/// let router: axum::Router = timebox::routes![user, export]
///     .into_router(&Config::default())
///     .with_state(App);
/// ```
#[proc_macro_attribute]
pub fn get(args: TokenStream, item: TokenStream) -> TokenStream {
    route::route(Method::Get, args.into(), item.into()).into()
}

/// Makes an `async fn` the handler of `POST path`, with a route deadline.
///
/// Keys, at most one of the first two: `timeout_ms = N` (the route's
/// deadline, `N` milliseconds, at least 1) or `timeout = "off"` (no
/// deadline); without either, `server.timeouts.request_timeout_ms`; and
/// `min_budget_ms = N`, the time the handler needs. The handler stays callable
/// as written; collect it with `timebox::routes![..]`. See `get` for the
/// rules and the responses.
///
/// ```
/// use axum::Json;
/// use timebox::post;
///
/// #[post("/orders", timeout_ms = 5000)]
/// async fn create(Json(order): Json<String>) -> Json<String> {
///     Json(order)
/// }
/// ```
#[proc_macro_attribute]
pub fn post(args: TokenStream, item: TokenStream) -> TokenStream {
    route::route(Method::Post, args.into(), item.into()).into()
}

/// Makes an `async fn` the handler of `PUT path`, with a route deadline.
///
/// Keys, at most one of the first two: `timeout_ms = N` (the route's
/// deadline, `N` milliseconds, at least 1) or `timeout = "off"` (no
/// deadline); without either, `server.timeouts.request_timeout_ms`; and
/// `min_budget_ms = N`, the time the handler needs. The handler stays callable
/// as written; collect it with `timebox::routes![..]`. See `get` for the
/// rules and the responses.
///
/// ```
/// use axum::extract::Path;
/// use timebox::put;
///
/// #[put("/orders/{id}")]
/// async fn replace(Path(id): Path<u64>, body: String) -> String {
///     format!("{id}: {body}")
/// }
/// ```
#[proc_macro_attribute]
pub fn put(args: TokenStream, item: TokenStream) -> TokenStream {
    route::route(Method::Put, args.into(), item.into()).into()
}

/// Makes an `async fn` the handler of `DELETE path`, with a route deadline.
///
/// Keys, at most one of the first two: `timeout_ms = N` (the route's
/// deadline, `N` milliseconds, at least 1) or `timeout = "off"` (no
/// deadline); without either, `server.timeouts.request_timeout_ms`; and
/// `min_budget_ms = N`, the time the handler needs. The handler stays callable
/// as written; collect it with `timebox::routes![..]`. See `get` for the
/// rules and the responses.
///
/// ```
/// use axum::extract::Path;
/// use axum::http::StatusCode;
/// use timebox::delete;
///
/// #[delete("/orders/{id}", timeout_ms = 1000)]
/// async fn remove(Path(_id): Path<u64>) -> StatusCode {
///     StatusCode::NO_CONTENT
/// }
/// ```
#[proc_macro_attribute]
pub fn delete(args: TokenStream, item: TokenStream) -> TokenStream {
    route::route(Method::Delete, args.into(), item.into()).into()
}

/// Makes an `async fn` the handler of `PATCH path`, with a route deadline.
///
/// Keys, at most one of the first two: `timeout_ms = N` (the route's
/// deadline, `N` milliseconds, at least 1) or `timeout = "off"` (no
/// deadline); without either, `server.timeouts.request_timeout_ms`; and
/// `min_budget_ms = N`, the time the handler needs. The handler stays callable
/// as written; collect it with `timebox::routes![..]`. See `get` for the
/// rules and the responses.
///
/// ```
/// use axum::extract::Path;
/// use timebox::patch;
///
/// #[patch("/orders/{id}")]
/// async fn amend(Path(id): Path<u64>, note: String) -> String {
///     format!("{id}: {note}")
/// }
/// ```
#[proc_macro_attribute]
pub fn patch(args: TokenStream, item: TokenStream) -> TokenStream {
    route::route(Method::Patch, args.into(), item.into()).into()
}

/// Makes an `async fn` the handler of `HEAD path`, with a route deadline.
///
/// Keys, at most one of the first two: `timeout_ms = N` (the route's
/// deadline, `N` milliseconds, at least 1) or `timeout = "off"` (no
/// deadline); without either, `server.timeouts.request_timeout_ms`; and
/// `min_budget_ms = N`, the time the handler needs. A `#[get]` on the same path
/// already answers `HEAD` (with the `GET` deadline); use `#[head]` to answer
/// it differently. See `get` for the rules and the responses.
///
/// ```
/// use axum::http::StatusCode;
/// use timebox::head;
///
/// #[head("/health", timeout_ms = 100)]
/// async fn health() -> StatusCode {
///     StatusCode::OK
/// }
/// ```
#[proc_macro_attribute]
pub fn head(args: TokenStream, item: TokenStream) -> TokenStream {
    route::route(Method::Head, args.into(), item.into()).into()
}

/// Makes an `async fn` the handler of `OPTIONS path`, with a route deadline.
///
/// Keys, at most one of the first two: `timeout_ms = N` (the route's
/// deadline, `N` milliseconds, at least 1) or `timeout = "off"` (no
/// deadline); without either, `server.timeouts.request_timeout_ms`; and
/// `min_budget_ms = N`, the time the handler needs. The handler stays callable
/// as written; collect it with `timebox::routes![..]`. See `get` for the
/// rules and the responses.
///
/// ```
/// use axum::http::header::{HeaderMap, HeaderValue, ALLOW};
/// use timebox::options;
///
/// #[options("/orders", timeout = "off")]
/// async fn allowed() -> HeaderMap {
///     let mut headers = HeaderMap::new();
///     headers.insert(ALLOW, HeaderValue::from_static("GET, POST, OPTIONS"));
///     headers
/// }
/// ```
#[proc_macro_attribute]
pub fn options(args: TokenStream, item: TokenStream) -> TokenStream {
    route::route(Method::Options, args.into(), item.into()).into()
}
