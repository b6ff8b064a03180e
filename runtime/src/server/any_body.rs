//! The layers answer with axum's [`Response`] whatever body their inner
//! service's responses carry, as `Router::layer` does for its layers: a
//! tower-http `CompressionLayer` or `TraceLayer` may sit inside them in one
//! `ServiceBuilder`. A body that is axum's already is kept as it is.

use axum::body::Body;
use axum::response::Response;
use axum::BoxError;
use bytes::Bytes;

/// `response` with its body as axum's [`Body`].
pub(crate) fn into_axum<B>(response: http::Response<B>) -> Response
where
    B: http_body::Body<Data = Bytes> + Send + 'static,
    B::Error: Into<BoxError>,
{
    response.map(Body::new)
}
