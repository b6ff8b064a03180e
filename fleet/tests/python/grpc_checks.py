"""The official gRPC implementation (grpcio) against timebox's tonic layers.

    grpc_checks.py call TARGET METHOD TIMEOUT_S MILLIS
        One unary call of METHOD with a WaitRequest{millis: MILLIS} and a
        deadline of TIMEOUT_S seconds; prints what came back as JSON.
    grpc_checks.py serve
        Serves /fleet.Relay/Wait on 127.0.0.1, prints {"port": N}, then one
        line {"time_remaining": s} per call, until stdin closes.

Messages go as raw bytes: only WaitRequest's one varint field is written,
so no generated code or protobuf package is needed.
"""

import json
import sys
import time
from concurrent import futures

import grpc


def varint(n):
    out = bytearray()
    while True:
        byte = n & 0x7F
        n >>= 7
        if n:
            out.append(byte | 0x80)
        else:
            out.append(byte)
            return bytes(out)


def wait_request(millis):
    return b"\x08" + varint(millis) if millis else b""


def call(target, method, timeout, millis):
    with grpc.insecure_channel(target) as channel:
        stub = channel.unary_unary(method)
        start = time.monotonic()
        try:
            stub(wait_request(millis), timeout=timeout)
            code, details, trailing = "OK", "", {}
        except grpc.RpcError as err:
            code = err.code().name
            details = err.details()
            trailing = {key: value for key, value in (err.trailing_metadata() or ())}
        elapsed = time.monotonic() - start
    print(json.dumps({"code": code, "details": details, "elapsed": elapsed, "trailing": trailing}))


def serve():
    def wait(request, context):
        print(json.dumps({"time_remaining": context.time_remaining()}), flush=True)
        return b""

    handler = grpc.method_handlers_generic_handler(
        "fleet.Relay", {"Wait": grpc.unary_unary_rpc_method_handler(wait)}
    )
    server = grpc.server(futures.ThreadPoolExecutor(max_workers=2))
    server.add_generic_rpc_handlers((handler,))
    port = server.add_insecure_port("127.0.0.1:0")
    server.start()
    print(json.dumps({"port": port}), flush=True)
    sys.stdin.read()
    server.stop(grace=None)


if __name__ == "__main__":
    if sys.argv[1] == "call":
        call(sys.argv[2], sys.argv[3], float(sys.argv[4]), int(sys.argv[5]))
    elif sys.argv[1] == "serve":
        serve()
    else:
        sys.exit(f"unknown check {sys.argv[1]!r}")
