"""`python -m tests.llm_fake` as the AI quick start runs it: a fake OpenAI-compatible server in a process
of its own, on the port asked for, answering from the knowledge the system prompt carries."""

from __future__ import annotations

import json
import socket
import subprocess
import sys

import requests

from apps.ai.pipeline import assemble_messages
from tests.live import ROOT


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def test_the_fake_serves_on_the_port_asked_for_and_answers_from_the_prompts_knowledge():
    port = _free_port()
    fake = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "tests.llm_fake",
            "--flavor",
            "openai_compatible",
            "--port",
            str(port),
            "--from-knowledge",
        ],
        cwd=ROOT,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        info = json.loads(fake.stdout.readline())
        assert info["port"] == port and info["base_url"] == f"https://localhost:{port}/v1"

        def ask(knowledge: list[str]) -> str:
            messages = assemble_messages(
                system_prompt="You answer questions about our tea shop.",
                persona="",
                knowledge=knowledge,
                history=[],
                question="How fast do you ship?",
            )
            answer = requests.post(
                f"{info['base_url']}/chat/completions",
                json={"model": "fake-model", "messages": [{"role": m.role, "content": m.content} for m in messages]},
                headers={"Authorization": f"Bearer {info['api_key']}"},
                verify=info["ca_path"],
                timeout=30,
            )
            assert answer.status_code == 200, answer.text
            return answer.json()["choices"][0]["message"]["content"]

        # the pipeline's prompt with a retrieved rule: the answer is that rule
        shipping = "We ship green and black tea across Europe within 3 days."
        assert ask([shipping, "Gift boxes cost 5 EUR."]) == f"From what I know: {shipping}"
        # nothing retrieved: the fixed text
        assert ask([]) == "Hello from the fake provider."
    finally:
        fake.stdin.close()
        fake.wait(timeout=30)
