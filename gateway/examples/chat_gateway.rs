//! An OpenAI-compatible streaming chat gateway with MCP tools, built on
//! timebox: `cargo run --example chat_gateway`, then see the README's
//! "Run the gateway" section for what to send it.

fn main() -> std::process::ExitCode {
    timebox_gateway::serve_until_shutdown()
}
