//! Every method with every key combination: none, `timeout_ms`, `timeout = "off"`.

use std::time::Duration;

use axum::body::Body;
use axum::http::{Method, Request, StatusCode};
use timebox::__private::server::RouteDef;
use timebox::config::Config;
use timebox::server::{Route, RouteTimeout};
use timebox::sim::Sim;
use timebox::{delete, get, head, options, patch, post, put, routes};

#[get("/get")]
async fn get_inherit() -> &'static str {
    "get"
}

#[get("/get/override", timeout_ms = 5000)]
async fn get_override() -> &'static str {
    "get"
}

#[get("/get/off", timeout = "off")]
async fn get_off() -> &'static str {
    "get"
}

#[post("/post")]
async fn post_inherit() -> &'static str {
    "post"
}

#[post("/post/override", timeout_ms = 5000)]
async fn post_override() -> &'static str {
    "post"
}

#[post("/post/off", timeout = "off")]
async fn post_off() -> &'static str {
    "post"
}

#[put("/put")]
async fn put_inherit() -> &'static str {
    "put"
}

#[put("/put/override", timeout_ms = 5000)]
async fn put_override() -> &'static str {
    "put"
}

#[put("/put/off", timeout = "off")]
async fn put_off() -> &'static str {
    "put"
}

#[delete("/delete")]
async fn delete_inherit() -> &'static str {
    "delete"
}

#[delete("/delete/override", timeout_ms = 5000)]
async fn delete_override() -> &'static str {
    "delete"
}

#[delete("/delete/off", timeout = "off")]
async fn delete_off() -> &'static str {
    "delete"
}

#[patch("/patch")]
async fn patch_inherit() -> &'static str {
    "patch"
}

#[patch("/patch/override", timeout_ms = 5000)]
async fn patch_override() -> &'static str {
    "patch"
}

#[patch("/patch/off", timeout = "off")]
async fn patch_off() -> &'static str {
    "patch"
}

#[head("/head")]
async fn head_inherit() -> StatusCode {
    StatusCode::NO_CONTENT
}

#[head("/head/override", timeout_ms = 5000)]
async fn head_override() -> StatusCode {
    StatusCode::NO_CONTENT
}

#[head("/head/off", timeout = "off")]
async fn head_off() -> StatusCode {
    StatusCode::NO_CONTENT
}

#[options("/options")]
async fn options_inherit() -> &'static str {
    "options"
}

#[options("/options/override", timeout_ms = 5000)]
async fn options_override() -> &'static str {
    "options"
}

#[options("/options/off", timeout = "off")]
async fn options_off() -> &'static str {
    "options"
}

fn check<R: RouteDef<(), M>, M>(method: Method, path: &str, timeout: RouteTimeout) {
    let route: Route<()> = R::route();
    assert_eq!(route.method(), method);
    assert_eq!(route.path(), path);
    assert_eq!(route.timeout(), timeout);
}

fn main() {
    let five_seconds = RouteTimeout::Override(Duration::from_millis(5000));
    for (method, base) in [
        (Method::GET, "/get"),
        (Method::POST, "/post"),
        (Method::PUT, "/put"),
        (Method::DELETE, "/delete"),
        (Method::PATCH, "/patch"),
        (Method::HEAD, "/head"),
        (Method::OPTIONS, "/options"),
    ] {
        let checks: [fn(Method, &str, RouteTimeout); 3] = match base {
            "/get" => [
                check::<get_inherit, _>,
                check::<get_override, _>,
                check::<get_off, _>,
            ],
            "/post" => [
                check::<post_inherit, _>,
                check::<post_override, _>,
                check::<post_off, _>,
            ],
            "/put" => [
                check::<put_inherit, _>,
                check::<put_override, _>,
                check::<put_off, _>,
            ],
            "/delete" => [
                check::<delete_inherit, _>,
                check::<delete_override, _>,
                check::<delete_off, _>,
            ],
            "/patch" => [
                check::<patch_inherit, _>,
                check::<patch_override, _>,
                check::<patch_off, _>,
            ],
            "/head" => [
                check::<head_inherit, _>,
                check::<head_override, _>,
                check::<head_off, _>,
            ],
            _ => [
                check::<options_inherit, _>,
                check::<options_override, _>,
                check::<options_off, _>,
            ],
        };
        checks[0](method.clone(), base, RouteTimeout::Inherit);
        checks[1](method.clone(), &format!("{base}/override"), five_seconds);
        checks[2](method.clone(), &format!("{base}/off"), RouteTimeout::Off);
    }

    let router: axum::Router = routes![
        get_inherit,
        get_override,
        get_off,
        post_inherit,
        post_override,
        post_off,
        put_inherit,
        put_override,
        put_off,
        delete_inherit,
        delete_override,
        delete_off,
        patch_inherit,
        patch_override,
        patch_off,
        head_inherit,
        head_override,
        head_off,
        options_inherit,
        options_override,
        options_off,
    ]
    .into_router(&Config::default());

    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .start_paused(true)
        .build()
        .unwrap();
    runtime.block_on(async {
        let app = Sim::new(0).app(router);
        for method in [
            Method::GET,
            Method::POST,
            Method::PUT,
            Method::DELETE,
            Method::PATCH,
            Method::OPTIONS,
        ] {
            let name = method.as_str().to_lowercase();
            for path in [
                format!("/{name}"),
                format!("/{name}/override"),
                format!("/{name}/off"),
            ] {
                let request = Request::builder()
                    .method(method.clone())
                    .uri(&path)
                    .body(Body::empty())
                    .unwrap();
                let response = app.request(request).await;
                assert_eq!(response.status(), StatusCode::OK, "{method} {path}");
                let body = axum::body::to_bytes(response.into_body(), 1024)
                    .await
                    .unwrap();
                assert_eq!(body, name.as_bytes(), "{method} {path}");
            }
        }
        for path in ["/head", "/head/override", "/head/off"] {
            let request = Request::head(path).body(Body::empty()).unwrap();
            let response = app.request(request).await;
            assert_eq!(response.status(), StatusCode::NO_CONTENT, "HEAD {path}");
        }
    });
}
