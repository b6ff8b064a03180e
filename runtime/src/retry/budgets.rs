//! [`RetryBudgets`]: one retry bucket per upstream host.

use std::fmt;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;

use http::Uri;

use super::budget::{Costs, RetryBudget};
use crate::bounded_map::BoundedMap;
use crate::config::BudgetConfig;

/// The retry buckets of one client: one [`RetryBudget`] per upstream host.
///
/// A host's key is `host:port`, the host lowercased and the scheme's default
/// port filled in, so `http://A.example/` and `http://a.example:80/x` share a
/// bucket while `https://a.example/` (port 443) has its own. Buckets are made
/// on first use and kept for the life of the table; clones share the table.
///
/// [`for_uri`](RetryBudgets::for_uri) answers `None`, meaning "no budget: only
/// `max_retries` and the deadline bound the retries", when
///
/// - the budget is disabled (`enabled = false`);
/// - the URI has no host, or no port and a scheme other than `http`,
///   `https`, `ws` or `wss` (`ftp`, say), whose port is not known;
/// - the table already holds `max_hosts` buckets and the host is not one of
///   them. Hosts seen earlier keep their buckets; there is no eviction, so a
///   flood of new host names cannot push out the buckets that protect real
///   upstreams. The first refusal is logged at `warn`; every refusal is
///   counted by [`unbudgeted_hosts`](RetryBudgets::unbudgeted_hosts).
///
/// The table is looked up once per call, not per token operation, so it sits
/// behind a lock; the buckets themselves are lock-free. It is ordered, so
/// nothing about it depends on a random hash seed.
///
/// # Examples
///
/// ```
/// use http::Uri;
/// use timebox::config::BudgetConfig;
/// use timebox::retry::{RetryBudgets, RetryKind};
///
/// let budgets = RetryBudgets::new(&BudgetConfig::default());
/// let a = budgets.for_uri(&Uri::from_static("http://A.example/users")).unwrap();
/// let same = budgets.for_uri(&Uri::from_static("http://a.example:80/orders")).unwrap();
/// assert!(a.try_withdraw(RetryKind::Transient));
/// assert_eq!(same.tokens(), 486.0);
/// assert_eq!(budgets.len(), 1);
/// ```
#[derive(Clone)]
pub struct RetryBudgets {
    /// `None` when the budget is disabled.
    shared: Option<Arc<Shared>>,
}

struct Shared {
    costs: Costs,
    max_hosts: usize,
    buckets: BoundedMap<RetryBudget>,
    refused: AtomicU64,
    warned: AtomicBool,
}

impl RetryBudgets {
    /// An empty table whose buckets are sized and priced by `config`; with
    /// `enabled = false`, a table that never hands out a budget.
    #[must_use]
    pub fn new(config: &BudgetConfig) -> Self {
        let shared = config.enabled.then(|| {
            Arc::new(Shared {
                costs: Costs::new(config),
                max_hosts: config.max_hosts,
                buckets: BoundedMap::new(config.max_hosts),
                refused: AtomicU64::new(0),
                warned: AtomicBool::new(false),
            })
        });
        Self { shared }
    }

    /// The bucket of the host `uri` points at, made on first use; `None` when
    /// the host has no budget (see the type's docs for when). A lookup takes
    /// a place in the table as a call does: while budgets are on, the client
    /// gives a breaker and hedging stats only to hosts that have a bucket.
    #[must_use]
    pub fn for_uri(&self, uri: &Uri) -> Option<RetryBudget> {
        self.for_host(&host_key(uri)?)
    }

    /// The bucket of the host `key` (as [`host_key`] makes it), made on
    /// first use.
    pub(crate) fn for_host(&self, key: &str) -> Option<RetryBudget> {
        let shared = self.shared.as_ref()?;
        let budget = shared
            .buckets
            .get_or_make(key, || RetryBudget::with_costs(shared.costs));
        if budget.is_none() {
            shared.refuse(key);
        }
        budget
    }

    /// Whether hosts get buckets at all (`retry_budget.enabled`).
    #[cfg(feature = "client")]
    pub(crate) fn is_enabled(&self) -> bool {
        self.shared.is_some()
    }

    /// The number of hosts that have a bucket (at most `max_hosts`).
    #[must_use]
    pub fn len(&self) -> usize {
        self.shared
            .as_ref()
            .map_or(0, |shared| shared.buckets.len())
    }

    /// Whether no host has a bucket yet.
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// How many lookups were refused a bucket because the table was full.
    ///
    /// This counts refusals, not distinct hosts: a host outside the table
    /// that is called ten times counts ten. (Remembering which hosts were
    /// refused would grow without bound, which `max_hosts` exists to prevent.)
    /// Lookups refused because the budget is disabled or the URI has no host
    /// are not counted.
    #[must_use]
    pub fn unbudgeted_hosts(&self) -> u64 {
        self.shared
            .as_ref()
            .map_or(0, |shared| shared.refused.load(Ordering::Relaxed))
    }
}

impl Shared {
    fn refuse(&self, key: &str) {
        self.refused.fetch_add(1, Ordering::Relaxed);
        if !self.warned.swap(true, Ordering::Relaxed) {
            tracing::warn!(
                max_hosts = self.max_hosts,
                host = key,
                "retry budget table is full: hosts first seen from now on retry without a budget, a circuit breaker or hedging"
            );
        }
    }
}

/// The key of the upstream host `uri` names: `host:port`, the host
/// lowercased, without the trailing dot of a fully qualified name, an IPv6
/// address in its shortest form, the scheme's default port filled in: one
/// key for each way of writing the same host. The retry budgets and the
/// client's breakers are kept per key, and logs name hosts by it.
///
/// `None` when `uri` has no host, or no port and a scheme whose default
/// port is not known (`http`, `https`, `ws`, `wss` are).
///
/// # Examples
///
/// ```
/// use http::Uri;
/// use timebox::retry::host_key;
///
/// let key = host_key(&Uri::from_static("https://API.example/v1"));
/// assert_eq!(key.as_deref(), Some("api.example:443"));
/// let ipv6 = host_key(&Uri::from_static("http://[0:0:0:0:0:0:0:1]:8080/"));
/// assert_eq!(ipv6.as_deref(), Some("[::1]:8080"));
/// let rooted = host_key(&Uri::from_static("http://api.example./"));
/// assert_eq!(rooted.as_deref(), Some("api.example:80"));
/// assert_eq!(host_key(&Uri::from_static("/just/a/path")), None);
/// ```
#[must_use]
pub fn host_key(uri: &Uri) -> Option<String> {
    let host = uri.host()?;
    let port = match uri.port_u16() {
        Some(port) => port,
        None => default_port(uri.scheme_str()?)?,
    };
    let mut digits = itoa::Buffer::new();
    let port = digits.format(port);
    let mut key = String::with_capacity(host.len() + 1 + port.len());
    let ipv6 = host
        .strip_prefix('[')
        .and_then(|host| host.strip_suffix(']'))
        .and_then(|address| address.parse::<std::net::Ipv6Addr>().ok());
    match ipv6 {
        Some(address) => {
            // Infallible: writing to a `String`.
            let _ = std::fmt::Write::write_fmt(&mut key, format_args!("[{address}]"));
        }
        None => {
            let host = host
                .strip_suffix('.')
                .filter(|host| !host.is_empty())
                .unwrap_or(host);
            key.push_str(host);
            key.make_ascii_lowercase();
        }
    }
    key.push(':');
    key.push_str(port);
    Some(key)
}

/// The port a URL of `scheme` means when it names none.
pub(crate) fn default_port(scheme: &str) -> Option<u16> {
    if scheme.eq_ignore_ascii_case("http") || scheme.eq_ignore_ascii_case("ws") {
        Some(80)
    } else if scheme.eq_ignore_ascii_case("https") || scheme.eq_ignore_ascii_case("wss") {
        Some(443)
    } else {
        None
    }
}

impl fmt::Debug for RetryBudgets {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut s = f.debug_struct("RetryBudgets");
        s.field("enabled", &self.shared.is_some());
        if let Some(shared) = &self.shared {
            s.field("hosts", &self.len())
                .field("max_hosts", &shared.max_hosts)
                .field("unbudgeted_hosts", &self.unbudgeted_hosts());
        }
        s.finish_non_exhaustive()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(uri: &'static str) -> Option<String> {
        host_key(&Uri::from_static(uri))
    }

    #[test]
    fn keys_lowercase_the_host_and_fill_in_default_ports() {
        assert_eq!(key("http://A.Example/x").as_deref(), Some("a.example:80"));
        assert_eq!(key("HTTPS://a.example").as_deref(), Some("a.example:443"));
        assert_eq!(
            key("http://a.example:8080").as_deref(),
            Some("a.example:8080")
        );
        assert_eq!(key("wss://a.example").as_deref(), Some("a.example:443"));
        assert_eq!(key("http://[::1]/").as_deref(), Some("[::1]:80"));
    }

    #[test]
    fn keys_need_a_host_and_a_known_port() {
        assert_eq!(key("/only/a/path"), None);
        assert_eq!(key("a.example:8080").as_deref(), Some("a.example:8080"));
        assert_eq!(key("ftp://a.example/file"), None);
        assert_eq!(
            key("ftp://a.example:21/file").as_deref(),
            Some("a.example:21")
        );
    }
}
