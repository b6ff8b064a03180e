//! [`Route`] and [`Routes`]: what the route macros produce and
//! [`routes!`](crate::routes) collects.

use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use axum::handler::Handler;
use axum::routing::{on, MethodFilter, MethodRouter};
use axum::Router;
use http::Method;

use crate::admission::DeadlineCheck;
use crate::config::{Concurrency, Config};
use crate::deadline::Formats;
use crate::observe::Label;

use super::route_deadline::UnappliedLimit;
use super::{DeadlineHandler, RouteSettings, RouteTimeout};

/// Mounts a route's handler, under its deadline when it has one.
type Mount<S> = Box<dyn FnOnce(Option<RouteSettings>) -> MethodRouter<S> + Send>;

/// One handler at one method and path, with its deadline rule.
///
/// The route macros build these; build one by hand to mount a handler that
/// has no attribute.
pub struct Route<S> {
    method: Method,
    path: &'static str,
    timeout: RouteTimeout,
    min_budget: Option<Duration>,
    mount: Mount<S>,
}

impl<S: Clone + Send + Sync + 'static> Route<S> {
    /// `handler` at `method` and `path`, under `timeout`.
    ///
    /// # Panics
    ///
    /// When `method` is not one axum can route (GET, POST, PUT, DELETE,
    /// PATCH, HEAD, OPTIONS, TRACE, CONNECT).
    #[track_caller]
    pub fn new<H, T>(method: Method, path: &'static str, timeout: RouteTimeout, handler: H) -> Self
    where
        H: Handler<T, S>,
        T: 'static,
    {
        let filter = MethodFilter::try_from(method.clone())
            .unwrap_or_else(|_| panic!("timebox cannot route the method {method}"));
        Self {
            method,
            path,
            timeout,
            min_budget: None,
            mount: Box::new(move |settings| match settings {
                Some(settings) => on(
                    filter,
                    DeadlineHandler {
                        inner: handler,
                        settings,
                    },
                ),
                None => on(filter, handler),
            }),
        }
    }

    /// The service time the deadline check compares a request's time left
    /// with (`min_budget_ms = N` in the route macros), instead of the
    /// route's measured median. Ignored on a route without a deadline.
    #[must_use]
    pub fn min_budget(mut self, min_budget: Duration) -> Self {
        self.min_budget = Some(min_budget);
        self
    }

    /// The method.
    pub fn method(&self) -> &Method {
        &self.method
    }

    /// The path.
    pub fn path(&self) -> &'static str {
        self.path
    }

    /// The deadline rule.
    pub fn timeout(&self) -> RouteTimeout {
        self.timeout
    }
}

impl<S> fmt::Debug for Route<S> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Route")
            .field("method", &self.method)
            .field("path", &self.path)
            .field("timeout", &self.timeout)
            .field("min_budget", &self.min_budget)
            .finish_non_exhaustive()
    }
}

/// A set of routes, turned into an axum router by [`Routes::into_router`].
///
/// Made by [`timebox::routes!`](crate::routes).
#[derive(Debug)]
#[must_use]
pub struct Routes<S> {
    routes: Vec<Route<S>>,
}

impl<S> Default for Routes<S> {
    fn default() -> Self {
        Self { routes: Vec::new() }
    }
}

impl<S: Clone + Send + Sync + 'static> Routes<S> {
    /// No routes yet.
    pub const fn new() -> Self {
        Self { routes: Vec::new() }
    }

    /// Adds `route`.
    pub fn route(mut self, route: Route<S>) -> Self {
        self.routes.push(route);
        self
    }

    /// The longest route override, which the shutdown grace should cover
    /// (see [`Config::validate_with_route_deadline`]).
    #[must_use]
    pub fn longest_override(&self) -> Option<Duration> {
        self.routes
            .iter()
            .filter_map(|route| match route.timeout {
                RouteTimeout::Override(timeout) => Some(timeout),
                RouteTimeout::Inherit | RouteTimeout::Off => None,
            })
            .max()
    }

    /// An axum router serving every route; the handler of each route that
    /// has a deadline (its override, else the global one) runs under it, as
    /// the [module docs](super) describe. With no deadline anywhere and no
    /// concurrency limit, a route is mounted as it is and no deadline
    /// machinery runs. With a limit and no deadline, it runs under no
    /// deadline either, but carries its settings, to tell whether a
    /// `TimeboxLayer` applies the limit (see below): a copy of them and an
    /// extension look-up a request, far less than the limit's own cost.
    ///
    /// The deadline is applied inside the handler, not by layers, so a route
    /// costs axum one boxed service, as a plain handler does; it is the same
    /// mechanism as [`RouteDeadlineLayer`](super::RouteDeadlineLayer)'s. The
    /// deadline counts from the first poll of the handler's future, before
    /// extraction, or, under a [`TimeboxLayer`](super::TimeboxLayer), from
    /// when the request reached that layer (each route keeps its own rule
    /// there). `Retry-After` values come from a random source seeded by
    /// the operating system, or from the request's
    /// [`Entropy`](crate::entropy::Entropy) extension when it has one (as
    /// `Sim::app` gives it).
    ///
    /// It adds no layer: the concurrency limit of
    /// `server.admission.concurrency` is a `TimeboxLayer`'s, which you put
    /// around the app's routes, one for the whole app so that every route
    /// shares the limit (readiness and metrics routes go after it, outside
    /// the limit). With a limit in `config`, the first request a route of
    /// this router serves with no `TimeboxLayer` around it logs a `warn!`
    /// (once per router) that no limit applies.
    ///
    /// Each route's deadline applies to its own method only: a `GET` override
    /// also covers `HEAD` (axum answers `HEAD` with the `GET` handler) and
    /// never other methods of the same path.
    ///
    /// Logs a `warn!` for each warning of
    /// [`Config::validate_with_route_deadline`] given the longest route
    /// override (a shutdown grace shorter than the longest request deadline
    /// plus 5 s), and an `error!` naming every key when `config` does not
    /// validate: the routes are still mounted, as `config` says. Call
    /// [`Config::validate`] at startup to stop on an invalid configuration.
    /// Also a `warn!` for each route whose `min_budget_ms` is not below the
    /// deadline it resolves to (the global one, which the macros cannot
    /// see): its deadline check would find every request too short.
    ///
    /// # Panics
    ///
    /// When two routes have the same method and path, as axum does.
    #[track_caller]
    pub fn into_router(self, config: &Config) -> Router<S> {
        // G4: a shutdown grace shorter than the longest deadline cuts
        // requests off; say so at startup.
        match config.validate_with_route_deadline(self.longest_override()) {
            Ok(warnings) => {
                for warning in warnings {
                    tracing::warn!(key = warning.key(), "{warning}");
                }
            }
            Err(err) => {
                let keys: Vec<&str> = err.keys().collect();
                tracing::error!(
                    ?keys,
                    "invalid configuration, routes mounted as it says \
                     (`Config::validate` at startup stops on it): {err}"
                );
            }
        }
        let global = config.server.timeouts.request_timeout();
        // A name left out was in the error above.
        let inbound = Formats::trusted_unsaid(&config.server.timeouts);
        // The concurrency limit is a `TimeboxLayer`'s: a route served with
        // none around it says so, once for the router.
        let unlimited = (config.server.admission.concurrency != Concurrency::Off)
            .then(|| Arc::new(UnappliedLimit::new()));
        let mut router = Router::new();
        for route in self.routes {
            let budget = route.timeout.resolve(global);
            warn_if_too_short(&route, budget);
            // A route that is `off` while others inherit a global deadline
            // still says so, to an outer `TimeboxLayer` (see its docs); with
            // no deadline anywhere (and no limit to warn of) a route is
            // mounted as it is.
            let wrapped = budget.is_some() || global.is_some() || unlimited.is_some();
            let settings = wrapped.then(|| RouteSettings {
                budget,
                inbound,
                path: Label::from_static(route.path),
                source: route.timeout.source(),
                observers: config.observers.clone(),
                // A1 needs a deadline to compare with.
                check: budget.and_then(|_| {
                    DeadlineCheck::for_route(&config.server.admission, route.min_budget)
                }),
                unlimited: unlimited.clone(),
            });
            // One `route` call per route, in a loop rather than a fold:
            // axum merges the methods of a path, and its panic on a clash
            // names the method and the path, and points at the caller.
            router = router.route(route.path, (route.mount)(settings));
        }
        router
    }
}

/// Says at startup that `route`'s deadline check (A1) would refuse every
/// request: its `min_budget_ms` is not below the deadline it resolves to.
fn warn_if_too_short<S>(route: &Route<S>, budget: Option<Duration>) {
    let (Some(budget), Some(min_budget)) = (budget, route.min_budget) else {
        return;
    };
    if min_budget < budget {
        return;
    }
    let from = match route.timeout {
        RouteTimeout::Inherit => "`server.timeouts.request_timeout_ms`",
        RouteTimeout::Override(_) | RouteTimeout::Off => "its `timeout_ms`",
    };
    tracing::warn!(
        method = %route.method,
        route = route.path,
        min_budget_ms = min_budget.as_millis(),
        deadline_ms = budget.as_millis(),
        "the route's `min_budget_ms` is not below its deadline, from {from}: \
         its deadline check finds every request too short",
    );
}

/// Collects handlers annotated with the route macros into
/// [`Routes`].
///
/// Name each handler by its path, as you would call it: `routes![a, b, api::c]`,
/// or by a name a `use` brought in (`use api::c;`, then `routes![c]`).
///
/// Each route macro puts a hidden type of the handler's own name beside
/// it, which is what `routes!` finds (and what a `use` of the handler
/// brings along). So a handler cannot share its name with a module or a
/// type of its module, or with a crate that a path in that module starts
/// from (`use metrics::counter;` beside `async fn metrics()`): rustc says
/// the name is defined twice, or is ambiguous. Rename the handler.
///
/// A function without a route attribute has no such type: rustc says
/// "expected type, found function" at its name in `routes!`. Give it one
/// (`#[get("/path")]`, ..).
///
/// # Examples
///
/// ```
/// use timebox::config::Config;
/// use timebox::{get, post, routes};
///
/// #[get("/users")]
/// async fn list_users() -> &'static str {
///     "[]"
/// }
///
/// #[post("/users", timeout_ms = 500)]
/// async fn create_user() -> &'static str {
///     "created"
/// }
///
/// let mut config = Config::default();
/// config.server.timeouts.request_timeout_ms = Some(2_000);
/// // `list_users` runs under the global 2 s, `create_user` under its 500 ms.
/// let app: axum::Router = routes![list_users, create_user].into_router(&config);
/// ```
#[macro_export]
macro_rules! routes {
    ($($handler:path),* $(,)?) => {{
        // Each handler named as the function it is, so that a deprecated
        // one warns as a deprecated function.
        $(let _ = $handler;)*
        $crate::server::Routes::new()
            $(.route(<$handler as $crate::__private::server::RouteDef<_, _>>::route()))*
    }};
}
