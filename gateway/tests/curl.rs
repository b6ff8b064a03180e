//! Every curl command of the README's "Run the gateway" section, run as
//! written against the gateway on its embedded defaults (the one naming
//! `@mine` against a gateway whose `mine` is the official MCP SDK's
//! server), does what the README says it does.

mod support;

use std::process::Command;
use std::time::Duration;

use support::{mcp_events, scratch_dir, Gateway, McpServer};

const README_ADDR: &str = "http://127.0.0.1:8080";

/// The `curl` lines of the README's gateway section.
fn readme_commands() -> Vec<String> {
    let readme = include_str!("../../README.md");
    let section = readme
        .split("## Run the gateway")
        .nth(1)
        .and_then(|rest| rest.split("\n## ").next())
        .expect("the README has a `Run the gateway` section");
    section
        .lines()
        .filter(|line| line.starts_with("curl "))
        .map(str::to_owned)
        .collect()
}

/// Runs `command` with the gateway's address in place of the README's, at
/// most `bound` (as a user pressing Ctrl-C would); what curl printed.
fn run(command: &str, gateway: &Gateway, bound: Duration) -> String {
    assert!(
        command.contains(README_ADDR),
        "a README command that does not call the gateway at {README_ADDR}: {command}"
    );
    let command = command.replace(README_ADDR, &gateway.base).replacen(
        "curl ",
        &format!("curl --silent --max-time {} ", bound.as_secs()),
        1,
    );
    let output = Command::new("sh")
        .args(["-c", &command])
        .output()
        .expect("curl runs");
    String::from_utf8_lossy(&output.stdout).into_owned()
}

/// The data lines of an SSE body, in order.
fn data_lines(body: &str) -> Vec<&str> {
    body.lines()
        .filter_map(|line| line.strip_prefix("data: "))
        .collect()
}

/// curl comes from Debian, not from a registry the tests can provision
/// from, so the README's test command leaves this test out; `.ci/run`
/// installs curl and runs it by name.
#[test]
#[ignore = "needs curl on PATH; .ci/run installs it"]
fn every_readme_command_does_what_the_readme_says() {
    support::needs_on_path("curl", "curl");
    let commands = readme_commands();
    assert_eq!(commands.len(), 9, "the README's commands: {commands:#?}");
    let gateway = Gateway::start(&[]);
    let dir = scratch_dir("curl-mine");
    let log = dir.join("server.jsonl");
    let server = McpServer::http(&log, &[]);
    let toml = format!(
        "[mcp.servers.mine]\nurl = \"{}\"\ntools = [\"slow_task\"]\n",
        server.url
    );
    std::fs::write(dir.join("timebox.toml"), toml).expect("write timebox.toml");
    let with_mine = Gateway::start_in(Some(&dir), &[]);
    std::thread::scope(|scope| {
        for command in &commands {
            let (gateway, with_mine, log) = (&gateway, &with_mine, &log);
            scope.spawn(move || {
                if command.contains("@mine") {
                    check_mine(command, with_mine, log);
                } else {
                    check(command, gateway);
                }
            });
        }
    });
}

/// The command whose tool runs on the user's own server, `mine`.
fn check_mine(command: &str, gateway: &Gateway, log: &std::path::Path) {
    let body = run(command, gateway, Duration::from_secs(3));
    assert!(body.contains(": tool progress 1/10"), "{body}");
    let events = mcp_events(log);
    assert!(
        events
            .iter()
            .any(|e| e["event"] == "started" && e["seconds"] == 10),
        "the call reached the SDK server: {events:#?}"
    );
}

fn check(command: &str, gateway: &Gateway) {
    let model = command
        .split(r#""model": ""#)
        .nth(1)
        .and_then(|rest| rest.split('"').next());
    let streamed = command.contains(r#""stream": true"#);
    match (model, streamed) {
        (Some("scripted-fast"), true) => {
            let body = run(command, gateway, Duration::from_secs(10));
            let data = data_lines(&body);
            assert_eq!(data.last(), Some(&"[DONE]"), "{body}");
            assert!(
                data[data.len() - 2].contains(r#""finish_reason":"stop""#),
                "{body}"
            );
            assert!(
                body.contains(r#""object":"chat.completion.chunk""#),
                "{body}"
            );
        }
        (Some("scripted-fast"), false) => {
            let body = run(command, gateway, Duration::from_secs(10));
            assert!(body.contains(r#""object":"chat.completion""#), "{body}");
            assert!(
                body.contains("A deadline is a promise about time"),
                "{body}"
            );
        }
        (Some("scripted-thinker"), true) => {
            let body = run(command, gateway, Duration::from_secs(20));
            let before_first_token = body.split("data: ").next().unwrap_or_default();
            assert!(
                before_first_token.matches(": heartbeat").count() >= 3,
                "heartbeats while the model thinks: {body}"
            );
            assert!(!body.contains("event: error"), "{body}");
            assert!(body.contains(r#""finish_reason":"stop""#), "{body}");
            assert_eq!(data_lines(&body).last(), Some(&"[DONE]"), "{body}");
        }
        (Some("scripted-hang"), true) => {
            let body = run(command, gateway, Duration::from_secs(20));
            let error = body
                .split("event: error\ndata: ")
                .nth(1)
                .unwrap_or_else(|| panic!("an error event: {body}"));
            assert!(
                error.starts_with(r#"{"error":{"cause":"inactivity""#),
                "{body}"
            );
            assert_eq!(data_lines(&body).last(), Some(&"[DONE]"), "{body}");
        }
        (Some("scripted-tool-60s"), true) => {
            // Hang up after 3 s, as the README says to.
            let body = run(command, gateway, Duration::from_secs(3));
            assert!(body.contains("first. "), "{body}");
            assert!(body.contains(": tool progress 1/60"), "{body}");
            let bound = Duration::from_secs(2 + 5);
            for line in [
                "step=Cancel(Disconnect)",
                "notifications/cancelled received",
                "slow_task stopped: cancelled",
            ] {
                assert!(
                    gateway.wait_for_log(&[line], bound).is_some(),
                    "no `{line}` in the log:\n{}",
                    gateway.log_text()
                );
            }
        }
        (Some("gpt-4o"), false) => {
            let body = run(command, gateway, Duration::from_secs(10));
            assert!(body.starts_with("HTTP/1.1 404"), "{body}");
            assert!(body.contains(r#""param":"model""#), "{body}");
            assert!(body.contains("model `gpt-4o` does not exist"), "{body}");
        }
        (None, _) if command.contains("/v1/models") => {
            let body = run(command, gateway, Duration::from_secs(10));
            for model in [
                "scripted-fast",
                "scripted-thinker",
                "scripted-tool-60s",
                "scripted-hang",
            ] {
                assert!(body.contains(&format!(r#""id":"{model}""#)), "{body}");
            }
        }
        (None, _) if command.contains("/ready") => {
            assert_eq!(run(command, gateway, Duration::from_secs(10)), "ready");
        }
        _ => panic!("the test does not know what to expect of `{command}`"),
    }
}
