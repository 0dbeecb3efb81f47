"""Model answers with lone surrogates (broken ``\\ud800`` escapes) anywhere: cleaned where answers enter, so the
run is scored and written, and the viewer, ``report --csv`` and ``report --bundle`` read it back (issue 46, item 2)."""

from __future__ import annotations

import json

import pytest

pytest.importorskip("openai", reason="pip install 'webshop-gym[openai]' to run the served-model tests")

from tests.openai_server import ChatServer  # noqa: E402
from webshop_gym.agents.answer import MalformedAnswer, clean_json_text, read_answer  # noqa: E402
from webshop_gym.cli.app import main  # noqa: E402
from webshop_gym.runs.log import read_log  # noqa: E402


def _body(message: str) -> bytes:
    """A chat completion whose ``message`` object is the raw JSON text given (escapes as the server wrote them)."""
    return ('{"id": "x", "object": "chat.completion", "choices": [{"index": 0, "message": ' + message
            + ', "finish_reason": "stop"}], "usage": {"prompt_tokens": 7, "completion_tokens": 3}}').encode()


def _call(name: str, arguments: str, ident: str = "call_1") -> str:
    return '{"id": "' + ident + '", "type": "function", "function": {"name": "' + name + '", "arguments": "' + arguments + '"}}'


# each turn's answer, with a broken escape in another field: the content, the reasoning, a call's id,
# its arguments (escaped once: a lone surrogate in the string; escaped twice: in the arguments' JSON
# text, which the tools format decodes later) and its name
TURNS = [
    '{"role": "assistant", "content": "I look \\ud800 around", "reasoning_content": "\\udc00 so", "tool_calls": ['
    + _call("search", '{\\"query\\": \\"shoes \\\\ud800\\"}', "call_\\ud83d") + "]}",
    '{"role": "assistant", "content": null, "tool_calls": [' + _call("search", '{\\"query\\": \\"boots \\ud800\\"}') + "]}",
    '{"role": "assistant", "content": "", "tool_calls": [' + _call("click\\udfff", '{\\"label\\": \\"x\\"}') + "]}",
    '{"role": "assistant", "content": "\\ud83d\\ude00 done \\\\ud800", "reasoning": "ok \\udbff", "tool_calls": ['
    + _call("search", '{\\"query\\": \\"hat \\\\uDBFF\\\\uDFFF \\\\\\\\ud800\\"}') + "]}",
]


#: Only the arguments' JSON text holds the broken escape: the answer itself encodes, the action it makes did not.
ARGUMENTS_ONLY = ['{"role": "assistant", "content": "ok", "tool_calls": [' + _call("search", '{\\"query\\": \\"shoes \\\\ud800\\"}') + "]}"]


def _encoded(body: bytes, encoding: str) -> bytes:
    """The same answer sent another way: each lone surrogate's escape as its raw bytes, or the body in UTF-16/32."""
    if encoding == "raw-bytes":  # what json.loads decodes with surrogatepass; escaped backslashes stay text
        return json.dumps(json.loads(body), ensure_ascii=False).encode("utf-8", "surrogatepass")
    if encoding in ("utf-16", "utf-32"):
        return body.decode("utf-8").encode(encoding)
    return body


ENCODINGS = ["escaped", "raw-bytes", "utf-16", "utf-32"]


@pytest.mark.parametrize(("turns", "encoding"), [(TURNS, e) for e in ENCODINGS] + [(ARGUMENTS_ONLY, "escaped")],
                         ids=[f"every-field-{e}" for e in ENCODINGS] + ["arguments-json-only"])
def test_a_run_with_lone_surrogates_is_scored_written_and_read_back(turns, encoding, tmp_path, make_viewer, capsys):
    def answer(messages):
        return _encoded(_body(turns[min(sum(m["role"] == "assistant" for m in messages), len(turns) - 1)]), encoding)

    out = tmp_path / "run.jsonl"
    with ChatServer(answer=answer) as server:
        assert main(["eval", "--policy", "openai:scripted", "--base-url", server.url, "--prompt", "tools",
                     "--num-goals", "2", "--max-steps", "4", "--max-retries", "0", "--quiet", "--out", str(out),
                     "--json", str(tmp_path / "r.json")]) == 0
        sent = [json.dumps(b, ensure_ascii=False).encode("utf-8") for b in server.requests]  # every body encodes
    result = json.loads((tmp_path / "r.json").read_text())
    assert result["errored"] == 0 and result["counts"]["episodes"] == 2 and len(sent) == 8
    text = out.read_text(encoding="utf-8")
    assert "\\ud800" not in text.lower().replace("\\\\ud800", "") and "\ud800" not in text
    # the readers: the viewer's pages, the CSV export and the bundle
    client = make_viewer(tmp_path)
    for step in range(5):
        assert client.get(f"/runs/run/0?step={step}").status_code == 200
    assert client.get("/runs/run").status_code == 200
    assert main(["report", str(out), "--no-plots", "--out", str(tmp_path / "r.html"), "--csv", str(tmp_path / "e.csv")]) == 0
    assert "\ufffd" in (tmp_path / "e.csv").read_text(encoding="utf-8")
    assert main(["report", str(out), "--bundle", str(tmp_path / "bundle")]) == 0
    assert (tmp_path / "bundle" / "index.html").is_file()
    capsys.readouterr()
    steps = read_log(out).episodes[0].steps
    if turns is ARGUMENTS_ONLY:
        assert [s["action"] for s in steps] == ["search[shoes \ufffd]"] * 4
        return
    assert [s["action"] for s in steps] == ["search[shoes \ufffd]", "search[boots \ufffd]", "", "search[hat \U0010ffff \\ud800]"]
    assert steps[0]["reasoning"] == "\ufffd so" and steps[3]["reasoning"] == "ok \ufffd"
    first = json.loads(steps[0]["model"]["response"])
    assert first["content"] == "I look \ufffd around" and first["tool_calls"][0]["id"] == "call_\ufffd"
    assert steps[2]["model"]["reason"] == "bad tool call: Tool click\ufffd not found."
    assert json.loads(steps[3]["model"]["response"])["content"] == "\U0001f600 done \\ud800"  # a pair, and text


@pytest.mark.parametrize("encoding", ENCODINGS)
def test_read_answer_cleans_every_string_and_refuses_what_is_no_answer(encoding):
    answer = read_answer(_encoded(_body(TURNS[0]), encoding))
    assert answer.text == "I look \ufffd around" and answer.reasoning == "\ufffd so"
    assert answer.tool_calls == [{"id": "call_\ufffd", "type": "function",
                                  "function": {"name": "search", "arguments": '{"query": "shoes \\ufffd"}'}}]
    assert json.loads(answer.tool_calls[0]["function"]["arguments"]) == {"query": "shoes \ufffd"}
    assert (answer.prompt_tokens, answer.completion_tokens) == (7, 3)
    finish = read_answer(_encoded(_body(TURNS[1]).replace(b'"stop"', b'"stop\\udc80"'), encoding)).finish_reason
    assert finish == "stop\ufffd"
    # JSON text: pairs and escaped backslashes are kept, lone escapes (high or low, any case) replaced
    assert clean_json_text(r'"\ud83d\ude00 \\ud800 \uDBFF\uDFFF \ud800\ud800 \udc00x"') == \
        r'"\ud83d\ude00 \\ud800 \uDBFF\uDFFF \ufffd\ufffd \ufffdx"'
    for body, reason in ((b"nope", "not JSON"), (b'{"choices": []}', "no choices"),
                         (b'{"choices": [{"message": 3}]}', "no message"), (b"[" * 100_000, "nested too deeply")):
        with pytest.raises(MalformedAnswer, match=reason):
            read_answer(body)
