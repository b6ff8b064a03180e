"""An MCP server written with the official Python SDK, for the gateway's
tests: one tool, `slow_task`, that works a second at a time, reports
progress after each second and records what happens to it.

Usage:
    python mcp_server.py --log FILE http [--hang-on-cancel] [--json-response]
        Streamable HTTP on 127.0.0.1, a port the OS picks; prints
        `listening on http://127.0.0.1:<port>/mcp` once it accepts. With
        `--json-response`, a request is answered with one JSON body once
        it is done (the SDK's JSON response mode), not an event stream.
    python mcp_server.py --log FILE stdio [--exit-after-calls N]
                         [--record-signals] [--linger]
        Over stdin and stdout; with `--exit-after-calls`, the process
        exits 200 ms after its Nth `slow_task` has answered (a server that
        crashes or is restarted between two requests). With
        `--record-signals`, it records each SIGINT and SIGTERM it gets
        before it acts on it as it would have. With `--linger`, it starts a
        child process (`sleep 600`), ignores SIGTERM and stays after its
        stdin closes (a server that will not exit).

Every line of FILE is one JSON object: `event` (`started`, `cancelled`,
`finished` for a `slow_task`, with `request_id`, `session` and `seconds`;
`exiting` just before `--exit-after-calls` ends the process; `signal`,
with `signal` (its name), for `--record-signals`; `spawned`, with `pid`
and `child`, when `--linger` has started its child;
over HTTP also `initialize` for each new session and `notice` with the
`request_id` of each `notifications/cancelled`, when its request arrives,
before the SDK answers it) and `t` (Unix seconds).
`session` is the MCP session id over HTTP, the process over stdio.

`--hang-on-cancel` makes a server that never reads its cancellation
notices: a POST that carries `notifications/cancelled` is never answered.
"""

import argparse
import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time

import anyio
import uvicorn
from mcp.server.mcpserver import Context, MCPServer


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--log", required=True)
    parser.add_argument("transport", choices=["http", "stdio"])
    parser.add_argument("--hang-on-cancel", action="store_true")
    parser.add_argument("--json-response", action="store_true")
    parser.add_argument("--exit-after-calls", type=int)
    parser.add_argument("--record-signals", action="store_true")
    parser.add_argument("--linger", action="store_true")
    args = parser.parse_args()
    log = open(args.log, "a", buffering=1, encoding="utf-8")

    def call_of(ctx: Context) -> dict:
        """What the log says of a call, read while its request is live (a
        cancelled request's context may no longer answer)."""
        headers = ctx.headers or {}
        return {
            "request_id": ctx.request_id,
            "session": headers.get("mcp-session-id") or f"stdio-{os.getpid()}",
        }

    def record(event: str, call: dict, seconds: int) -> None:
        line = {"event": event, "t": time.time(), **call, "seconds": seconds}
        log.write(json.dumps(line) + "\n")

    server = MCPServer("timebox-test-tools", log_level="WARNING")

    @server.tool()
    async def slow_task(seconds: int, ctx: Context, progress: bool = True) -> str:
        """Works for the given number of seconds, reporting progress every second."""
        call = call_of(ctx)
        record("started", call, seconds)
        try:
            for done in range(1, seconds + 1):
                await anyio.sleep(1)
                if progress:
                    await ctx.report_progress(done, seconds, f"{done} of {seconds} s")
        except anyio.get_cancelled_exc_class():
            record("cancelled", call, seconds)
            raise
        record("finished", call, seconds)
        finished.append(call)
        if len(finished) == args.exit_after_calls:
            threading.Timer(0.2, exit_now, [call]).start()
        return f"worked for {seconds} s"

    def exit_now(call: dict) -> None:
        record("exiting", call, 0)
        os._exit(0)

    finished = []

    def recording(previous):
        """A signal handler that records the signal, then does what
        `previous`, the handler it replaces, would have done."""

        def handler(signum, frame):
            line = {"event": "signal", "t": time.time(), "signal": signal.Signals(signum).name}
            log.write(json.dumps(line) + "\n")
            if callable(previous):
                previous(signum, frame)
            else:
                signal.signal(signum, signal.SIG_DFL)
                os.kill(os.getpid(), signum)

        return handler

    if args.transport == "stdio":
        if args.record_signals:
            for signum in (signal.SIGINT, signal.SIGTERM):
                signal.signal(signum, recording(signal.getsignal(signum)))
        if args.linger:
            # Started before SIGTERM is ignored: a child inherits that.
            child = subprocess.Popen(["sleep", "600"])
            line = {"event": "spawned", "t": time.time(), "pid": os.getpid(), "child": child.pid}
            log.write(json.dumps(line) + "\n")
            signal.signal(signal.SIGTERM, signal.SIG_IGN)
        server.run("stdio")
        if args.linger:
            time.sleep(600)
        return

    def record_message(body: bytes) -> None:
        try:
            message = json.loads(body)
        except ValueError:
            return
        if not isinstance(message, dict):
            return
        line = {"t": time.time()}
        if message.get("method") == "initialize":
            line["event"] = "initialize"
        elif message.get("method") == "notifications/cancelled":
            line["event"] = "notice"
            line["request_id"] = str(message.get("params", {}).get("requestId"))
        else:
            return
        log.write(json.dumps(line) + "\n")

    app = watch(
        server.streamable_http_app(json_response=args.json_response),
        record_message,
        args.hang_on_cancel,
    )
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    config = uvicorn.Config(app, log_level="warning", lifespan="on")
    http = uvicorn.Server(config)

    async def serve() -> None:
        async with anyio.create_task_group() as tasks:
            tasks.start_soon(http.serve, [sock])
            while not http.started:
                await anyio.sleep(0.01)
            print(f"listening on http://127.0.0.1:{port}/mcp", flush=True)

    anyio.run(serve)


def watch(app, on_message, hang_on_cancel):
    """`app`, calling `on_message` with each POST's body as it arrives,
    before the SDK reads it, and, with `hang_on_cancel`, never answering a
    request that carries a cancellation notice."""

    async def wrapped(scope, receive, send):
        if scope["type"] != "http" or scope["method"] != "POST":
            await app(scope, receive, send)
            return
        body = b""
        more = True
        while more:
            message = await receive()
            body += message.get("body", b"")
            more = message.get("more_body", False)
        on_message(body)
        if hang_on_cancel and b"notifications/cancelled" in body:
            print("hanging on a cancellation notice", file=sys.stderr, flush=True)
            await anyio.sleep_forever()

        replayed = False

        async def replay():
            nonlocal replayed
            if not replayed:
                replayed = True
                return {"type": "http.request", "body": body, "more_body": False}
            return await receive()

        await app(scope, replay, send)

    return wrapped


if __name__ == "__main__":
    main()
