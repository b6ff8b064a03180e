//! Requests the gateway refuses (each error in OpenAI's shape, naming the
//! field that is wrong), one it cuts off at the request deadline, and one it
//! must not cut off; and a bad `RUST_LOG` at startup.

mod support;

use serde_json::{json, Value};
use support::{answer_of, open_stream, read_to_end, Gateway};

async fn post(gateway: &Gateway, body: &str) -> (u16, Value) {
    let response = reqwest::Client::new()
        .post(format!("{}/v1/chat/completions", gateway.base))
        .header("content-type", "application/json")
        .body(body.to_owned())
        .send()
        .await
        .expect("the gateway answers");
    let status = response.status().as_u16();
    let text = response.text().await.expect("a body");
    (
        status,
        serde_json::from_str(&text).unwrap_or_else(|err| panic!("{err}: {text}")),
    )
}

#[tokio::test]
async fn bad_requests_get_an_openai_error_naming_the_field() {
    let gateway = Gateway::start(&[]);
    let messages = json!([{ "role": "user", "content": "hi" }]);

    // OpenAI's status for a body of the wrong shape, as for bad JSON: 400
    // (axum's own is 422).
    let (status, body) = post(&gateway, &json!({ "messages": messages }).to_string()).await;
    assert_eq!(status, 400);
    assert_eq!(body["error"]["type"], "invalid_request_error");
    let message = body["error"]["message"].as_str().unwrap_or_default();
    assert!(message.contains("missing field `model`"), "{body}");
    assert_eq!(body["error"]["param"], "model", "{body}");

    // A field of the wrong type, or missing, deeper in: `param` names it as
    // OpenAI does.
    for (request, param) in [
        (json!({ "model": 5, "messages": messages }), "model"),
        (
            json!({ "model": "scripted-fast", "messages": [{ "role": 5, "content": "hi" }] }),
            "messages[0].role",
        ),
        (
            json!({ "model": "scripted-fast", "messages": [{ "content": "hi" }] }),
            "messages[0].role",
        ),
        (
            json!({ "model": "scripted-fast", "messages": [messages[0], "hi"] }),
            "messages[1]",
        ),
        (
            json!({ "model": "scripted-fast", "messages": messages, "temperature": "x" }),
            "temperature",
        ),
        (
            json!({ "model": "scripted-fast", "messages": messages, "max_tokens": -1 }),
            "max_tokens",
        ),
    ] {
        let (status, body) = post(&gateway, &request.to_string()).await;
        assert_eq!(status, 400, "{request}: {body}");
        assert_eq!(body["error"]["param"], param, "{request}: {body}");
    }

    // JSON that does not parse is about the body as a whole.
    let (status, body) = post(&gateway, r#"{"model": "scripted-fast", "messages": "#).await;
    assert_eq!(status, 400, "{body}");
    assert_eq!(body["error"]["param"], serde_json::Value::Null, "{body}");

    let (status, body) = post(
        &gateway,
        &json!({ "model": "scripted-fast", "messages": [] }).to_string(),
    )
    .await;
    assert_eq!(status, 400);
    assert_eq!(body["error"]["param"], "messages");

    // OpenAI's roles only; the error names the message.
    let (status, body) = post(
        &gateway,
        &json!({
            "model": "scripted-fast",
            "messages": [
                { "role": "system", "content": "be brief" },
                { "role": "wizard", "content": "hi" },
            ],
        })
        .to_string(),
    )
    .await;
    assert_eq!(status, 400, "{body}");
    assert_eq!(body["error"]["type"], "invalid_request_error");
    assert_eq!(body["error"]["param"], "messages[1].role");
    let message = body["error"]["message"].as_str().unwrap_or_default();
    assert!(message.contains("`wizard`"), "{body}");
    for role in [
        "system",
        "developer",
        "user",
        "assistant",
        "tool",
        "function",
    ] {
        let (status, body) = post(
            &gateway,
            &json!({ "model": "scripted-fast", "messages": [{ "role": role, "content": "hi" }] })
                .to_string(),
        )
        .await;
        assert_eq!(status, 200, "{role}: {body}");
    }

    // Content is text, a list of content parts, or absent; the error names
    // the message, or the part.
    for (content, param) in [
        (json!(42), "messages[0].content"),
        (json!({ "text": "hi" }), "messages[0].content"),
        (json!([{ "text": "no type" }]), "messages[0].content[0]"),
        (
            json!([{ "type": "text", "text": "hi" }, { "type": "text" }]),
            "messages[0].content[1]",
        ),
        (json!(["hi"]), "messages[0].content[0]"),
    ] {
        let request = json!({
            "model": "scripted-fast",
            "messages": [{ "role": "user", "content": content }],
        });
        let (status, body) = post(&gateway, &request.to_string()).await;
        assert_eq!(status, 400, "{content}: {body}");
        assert_eq!(body["error"]["param"], param, "{content}: {body}");
    }
    for content in [
        json!(null),
        json!([
            { "type": "text", "text": "what is in " },
            { "type": "image_url", "image_url": { "url": "data:," } },
        ]),
    ] {
        let request = json!({
            "model": "scripted-fast",
            "messages": [{ "role": "user", "content": content }],
        });
        let (status, body) = post(&gateway, &request.to_string()).await;
        assert_eq!(status, 200, "{content}: {body}");
    }

    // Values OpenAI's API refuses: out of range, or more than the one
    // choice the gateway answers with.
    for (field, value, said) in [
        (
            "temperature",
            json!(2.5),
            "`temperature` is 2.5; expected a number from 0 to 2",
        ),
        (
            "top_p",
            json!(-0.1),
            "`top_p` is -0.1; expected a number from 0 to 1",
        ),
        (
            "n",
            json!(2),
            "`n` is 2; expected 1: the gateway answers with one choice",
        ),
        ("n", json!(0), "`n` is 0; expected at least 1"),
        (
            "max_completion_tokens",
            json!(0),
            "`max_completion_tokens` is 0; expected at least 1",
        ),
    ] {
        let mut request = json!({ "model": "scripted-fast", "messages": messages });
        request[field] = value;
        let (status, body) = post(&gateway, &request.to_string()).await;
        assert_eq!(status, 400, "{request}: {body}");
        assert_eq!(body["error"]["param"], field, "{request}: {body}");
        assert_eq!(body["error"]["message"], said, "{request}: {body}");
    }
    // In range, or `null`, they are accepted.
    let request = json!({
        "model": "scripted-fast",
        "messages": messages,
        "temperature": 0.7,
        "top_p": null,
        "n": 1,
        "max_tokens": 50,
    });
    let (status, body) = post(&gateway, &request.to_string()).await;
    assert_eq!(status, 200, "{body}");

    let (status, body) = post(
        &gateway,
        &json!({ "model": "scripted-tool-0s", "messages": messages }).to_string(),
    )
    .await;
    assert_eq!(status, 404);
    assert_eq!(body["error"]["param"], "model");
    assert_eq!(body["error"]["code"], "model_not_found");
}

/// A path the gateway does not serve, or one asked with another method, is
/// answered in OpenAI's error shape as well.
#[tokio::test]
async fn an_unknown_path_or_method_gets_an_openai_error() {
    let gateway = Gateway::start(&[]);
    let client = reqwest::Client::new();
    let unknown = client
        .post(format!("{}/v1/embeddings", gateway.base))
        .send()
        .await
        .expect("the gateway answers");
    assert_eq!(unknown.status(), 404);
    let body: Value = serde_json::from_str(&unknown.text().await.expect("a body")).expect("JSON");
    assert_eq!(body["error"]["type"], "invalid_request_error", "{body}");
    assert_eq!(
        body["error"]["message"], "Invalid URL (POST /v1/embeddings)",
        "{body}"
    );

    let wrong = client
        .get(format!("{}/v1/chat/completions", gateway.base))
        .send()
        .await
        .expect("the gateway answers");
    assert_eq!(wrong.status(), 405);
    assert_eq!(wrong.headers()["allow"], "POST");
    let body: Value = serde_json::from_str(&wrong.text().await.expect("a body")).expect("JSON");
    assert_eq!(body["error"]["type"], "invalid_request_error", "{body}");
    assert_eq!(
        body["error"]["message"], "/v1/chat/completions does not take GET",
        "{body}"
    );
}

/// `"stream": null` is what clients generated from OpenAI's API description
/// send for an unset field; the API reads it as `false`.
#[tokio::test]
async fn a_null_stream_is_not_streamed() {
    let gateway = Gateway::start(&[]);
    let request = json!({
        "model": "scripted-fast",
        "messages": [{ "role": "user", "content": "hi" }],
        "stream": null,
    });
    let (status, body) = post(&gateway, &request.to_string()).await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["object"], "chat.completion", "{body}");
}

/// An answer that is not streamed runs under the request deadline: a
/// 60 s tool call is cut off with timebox's 503, and the tool is told.
#[tokio::test]
async fn an_answer_past_the_request_deadline_is_a_503_and_the_tool_is_cancelled() {
    let gateway = Gateway::start(&[("TIMEBOX_SERVER__TIMEOUTS__REQUEST_TIMEOUT_MS", "1500")]);
    let response = reqwest::Client::new()
        .post(format!("{}/v1/chat/completions", gateway.base))
        .header("content-type", "application/json")
        .body(
            json!({
                "model": "scripted-tool-60s",
                "messages": [{ "role": "user", "content": "hi" }],
            })
            .to_string(),
        )
        .send()
        .await
        .expect("the gateway answers");
    assert_eq!(response.status(), 503);
    assert!(response.headers().contains_key("retry-after"));
    let bound = std::time::Duration::from_secs(5);
    for line in [
        "notifications/cancelled received",
        "slow_task stopped: cancelled",
    ] {
        assert!(
            gateway.wait_for_log(&[line], bound).is_some(),
            "no `{line}`:\n{}",
            gateway.log_text()
        );
    }
}

/// A tool that works silently for 3 s, under a 1 s inactivity window: the
/// window is suspended while the tool runs (W3), so the answer completes.
#[tokio::test]
async fn a_silent_tool_call_longer_than_the_inactivity_window_does_not_end_the_stream() {
    let gateway = Gateway::start(&[("TIMEBOX_STREAM__STREAM_INACTIVITY_TIMEOUT_SECS", "1")]);
    let mut response = open_stream(
        &reqwest::Client::new(),
        &gateway.base,
        "scripted-tool-quiet-3s",
    )
    .await;
    let body = read_to_end(&mut response).await;
    assert!(!body.contains("event: error"), "{body}");
    assert!(
        !body.contains(": tool progress"),
        "the tool was silent: {body}"
    );
    assert!(answer_of(&body).contains("worked for 3 s"), "{body}");
    assert!(body.contains(r#""finish_reason":"stop""#), "{body}");
    assert!(body.trim_end().ends_with("data: [DONE]"), "{body}");
}

/// Slow-loris: half a request head and nothing more. The gateway closes the
/// connection at its header bound (300 ms here; 30 s by default).
#[tokio::test]
async fn a_half_sent_request_head_is_disconnected_at_the_header_bound() {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};

    let gateway = Gateway::start(&[("TIMEBOX_SERVER__HEADER_READ_TIMEOUT_MS", "300")]);
    let addr = gateway.base.trim_start_matches("http://");
    // The gateway's bound starts once it accepts, after this.
    let before_connect = std::time::Instant::now();
    let mut stream = tokio::net::TcpStream::connect(addr)
        .await
        .expect("the gateway accepts");
    stream
        .write_all(b"GET /v1/models HTTP/1.1\r\nHost: x\r\n")
        .await
        .unwrap();
    let mut buf = [0u8; 64];
    let read = tokio::time::timeout(std::time::Duration::from_secs(2), stream.read(&mut buf))
        .await
        .expect("the gateway closed the connection within 2 s");
    assert!(matches!(read, Ok(0) | Err(_)), "{read:?}");
    // Not before the bound.
    let took = before_connect.elapsed();
    assert!(took >= std::time::Duration::from_millis(300), "{took:?}");
}

/// `RUST_LOG=` (set, empty, as an env file leaves it) is the default
/// filter, not one that turns every line off.
#[test]
fn an_empty_rust_log_keeps_the_default_log() {
    let gateway = Gateway::start(&[("RUST_LOG", "")]);
    assert!(
        gateway
            .wait_for_log(
                &["opened an MCP session"],
                std::time::Duration::from_secs(5)
            )
            .is_some(),
        "no info line with `RUST_LOG` empty: {:?}",
        gateway.log_text()
    );
}

/// Bad input at startup gets an error naming it, not a silent default: a
/// `RUST_LOG` that is no log filter.
#[test]
fn a_rust_log_that_is_no_filter_is_an_error_naming_it() {
    let dir = support::scratch_dir("bad-rust-log");
    let child = std::process::Command::new(env!("CARGO_BIN_EXE_chat-gateway"))
        .current_dir(&dir)
        .env("CHAT_GATEWAY_ADDR", "127.0.0.1:0")
        .env("RUST_LOG", "info,rmcp=loud")
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("the gateway runs");
    let output = support::child::output_within(
        child,
        std::time::Duration::from_secs(20),
        "the gateway started with a `RUST_LOG` that is no filter",
    );
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(1), "{stderr}");
    assert!(stderr.contains("`RUST_LOG`"), "{stderr}");
    assert!(stderr.contains("rmcp=loud"), "{stderr}");
}

/// A gateway with no MCP server over HTTP (the default: the built-in one)
/// never builds timebox's HTTP client, which reads the system's CA
/// certificates: it starts and answers, a tool call included, in an image
/// without any.
#[cfg(target_os = "linux")]
#[tokio::test]
async fn without_a_server_over_http_the_gateway_needs_no_ca_certificates() {
    let gateway = Gateway::start(&support::child::NO_CA_CERTIFICATES);
    let messages = json!([{ "role": "user", "content": "hi" }]);

    for (model, said) in [
        ("scripted-fast", "A deadline is a promise"),
        ("scripted-tool-1s", "worked for 1 s"),
    ] {
        let (status, body) = post(
            &gateway,
            &json!({ "model": model, "messages": messages }).to_string(),
        )
        .await;
        assert_eq!(status, 200, "{model}: {body}");
        assert!(body.to_string().contains(said), "{model}: {body}");
    }
}
