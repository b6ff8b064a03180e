"""Checks the chat gateway with the official `openai` Python client.

Usage: python client_checks.py BASE_URL CHECK

BASE_URL is the gateway's address (http://127.0.0.1:PORT). CHECK is one of
the functions below. Each prints one JSON line with what it saw and exits 0
when the client saw what it should, 1 with the reason otherwise.
"""

import json
import sys

import openai

ANSWER = "A deadline is a promise about time: keep it, pass it on, and stop when it is spent."
MESSAGES = [{"role": "user", "content": "What is a deadline?"}]


def client(base_url, **options):
    return openai.OpenAI(base_url=base_url + "/v1", api_key="unused", **options)


def fail(reason, **seen):
    print(json.dumps({"ok": False, "reason": reason, **seen}))
    sys.exit(1)


def stream(base_url):
    """A streamed answer arrives whole and ends cleanly."""
    text, finish = "", None
    chunks = client(base_url).chat.completions.create(
        model="scripted-fast", messages=MESSAGES, stream=True
    )
    for chunk in chunks:
        choice = chunk.choices[0]
        text += choice.delta.content or ""
        finish = choice.finish_reason or finish
    if text != ANSWER:
        fail("the streamed answer is not the whole answer", text=text)
    if finish != "stop":
        fail("the stream did not end with finish_reason stop", finish=finish)
    return {"text": text, "finish_reason": finish}


def stream_usage(base_url):
    """A stream asked for its usage ends with a chunk that has no choices
    and says the usage the same answer not streamed says."""
    text, usage, after = "", None, 0
    chunks = client(base_url).chat.completions.create(
        model="scripted-fast",
        messages=MESSAGES,
        stream=True,
        stream_options={"include_usage": True},
    )
    for chunk in chunks:
        if usage is not None:
            after += 1
        if chunk.usage is not None:
            if chunk.choices:
                fail("the usage chunk has choices", choices=len(chunk.choices))
            usage = chunk.usage.model_dump()
            continue
        text += chunk.choices[0].delta.content or ""
    if text != ANSWER:
        fail("the streamed answer is not the whole answer", text=text)
    if usage is None:
        fail("no chunk said the usage")
    if after:
        fail("chunks came after the usage chunk", count=after)
    whole = client(base_url).chat.completions.create(model="scripted-fast", messages=MESSAGES)
    return {"usage": usage, "not_streamed": whole.usage.model_dump()}


def complete(base_url):
    """An answer that is not streamed arrives whole."""
    completion = client(base_url).chat.completions.create(
        model="scripted-fast", messages=MESSAGES
    )
    choice = completion.choices[0]
    if choice.message.content != ANSWER or choice.finish_reason != "stop":
        fail("the answer is not whole", text=choice.message.content)
    return {"text": choice.message.content, "object": completion.object}


def hang(base_url):
    """A model that goes silent: the client gets an error, not a short answer."""
    text = ""
    chunks = client(base_url).chat.completions.create(
        model="scripted-hang", messages=MESSAGES, stream=True
    )
    try:
        for chunk in chunks:
            text += chunk.choices[0].delta.content or ""
    except openai.APIError as err:
        cause = (err.body or {}).get("cause")
        if cause not in ("inactivity", "first_item"):
            fail("the error event does not name the timer", cause=cause, message=err.message)
        return {"text": text, "cause": cause, "message": err.message}
    fail("the stream ended without an error, like a short answer", text=text)


def disconnect(base_url):
    """Reads the start of a tool-using answer, waits for a line on stdin (the
    caller sends it once the tool call has started), then hangs up."""
    chunks = client(base_url).chat.completions.create(
        model="scripted-tool-60s", messages=MESSAGES, stream=True
    )
    text = ""
    for chunk in chunks:
        text += chunk.choices[0].delta.content or ""
        if text.endswith("first. "):
            break
    sys.stdin.readline()
    chunks.close()
    return {"text": text}


def shutdown_503(base_url):
    """During a shutdown a new request is refused with 503 and Retry-After."""
    try:
        client(base_url, max_retries=0).chat.completions.create(
            model="scripted-fast", messages=MESSAGES
        )
    except openai.APIStatusError as err:
        retry_after = err.response.headers.get("retry-after")
        if err.status_code != 503 or retry_after is None:
            fail("not a 503 with Retry-After", status=err.status_code, retry_after=retry_after)
        return {"status": err.status_code, "retry_after": retry_after}
    fail("the request was answered during the shutdown")


def bad_request(base_url):
    """A message of the wrong shape is the client's BadRequestError, naming
    the field, as a bad value is, and as `stream_options` without `stream`
    is."""
    seen = {}
    for name, request in [
        ("wrong_shape", {"messages": [{"role": 5, "content": "hi"}]}),
        ("bad_value", {"messages": [{"role": "user", "content": 42}]}),
        (
            "stream_options_without_stream",
            {"messages": MESSAGES, "stream_options": {"include_usage": True}},
        ),
    ]:
        try:
            client(base_url, max_retries=0).chat.completions.create(
                model="scripted-fast", **request
            )
        except openai.BadRequestError as err:
            seen[name] = {"status": err.status_code, "param": err.param}
            continue
        except openai.APIStatusError as err:
            fail("not a BadRequestError", case=name, status=err.status_code)
        fail("the request was answered", case=name)
    return seen


CHECKS = {
    f.__name__: f
    for f in (stream, stream_usage, complete, hang, disconnect, shutdown_503, bad_request)
}

if __name__ == "__main__":
    if len(sys.argv) != 3 or sys.argv[2] not in CHECKS:
        sys.exit(f"usage: client_checks.py BASE_URL {{{'|'.join(CHECKS)}}}")
    seen = CHECKS[sys.argv[2]](sys.argv[1])
    print(json.dumps({"ok": True, **seen}))
