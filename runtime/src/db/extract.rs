//! [`Conn`]: a pool connection as an axum extractor.

use axum::extract::{FromRef, FromRequestParts};
use http::request::Parts;
use sqlx::pool::PoolConnection;
use sqlx::{Database, Pool};

use super::{acquire, PoolWaitError};

/// A connection from the state's `Pool<DB>`, waited for until the request's
/// deadline (see [`acquire()`]).
///
/// Rejects with [`PoolWaitError`]: `503` with
/// [`DeadlineCancelled`](crate::server::DeadlineCancelled) when the deadline
/// passes during the wait.
#[derive(Debug)]
pub struct Conn<DB: Database>(pub PoolConnection<DB>);

impl<S, DB> FromRequestParts<S> for Conn<DB>
where
    S: Send + Sync,
    DB: Database,
    Pool<DB>: FromRef<S>,
{
    type Rejection = PoolWaitError;

    async fn from_request_parts(_parts: &mut Parts, state: &S) -> Result<Self, Self::Rejection> {
        let pool = Pool::<DB>::from_ref(state);
        acquire(&pool).await.map(Conn)
    }
}
