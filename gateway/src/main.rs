//! The chat gateway as a binary (the tests run it as a process); the same
//! program as `cargo run --example chat_gateway`.

fn main() -> std::process::ExitCode {
    timebox_gateway::serve_until_shutdown()
}
