"""Both fakes run as stand-alone servers: ``python -m fakes.<name> --port N``."""
from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import httpx
import pytest

from tests.fakes.conftest import _BOTO_SESSION, external_question

REPO_ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def run_fake():
    processes = []

    def start(module: str, *args: str) -> str:
        process = subprocess.Popen(
            [sys.executable, "-m", module, "--port", "0", *args], cwd=REPO_ROOT,
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        processes.append(process)
        line = process.stdout.readline()
        match = re.search(r"listening on (http://\S+)", line)
        assert match, f"no address announced: {line!r} {process.stderr.read() if not line else ''}"
        return match.group(1)

    yield start
    for process in processes:
        process.terminate()
        process.wait(timeout=10)
        process.stdout.close()
        process.stderr.close()


def test_mturk_fake_from_the_command_line(run_fake, hit_params):
    url = run_fake("fakes.mturk", "--balance", "42.00", "--seed", "3")
    client = _BOTO_SESSION.client("mturk", endpoint_url=url, region_name="us-east-1",
                                  aws_access_key_id="test", aws_secret_access_key="test")
    assert client.get_account_balance()["AvailableBalance"] == "42.00"
    hit_id = client.create_hit(**{**hit_params, "Question": external_question()})["HIT"]["HITId"]
    worked = httpx.post(f"{url}/_fake/complete_assignment",
                        json={"hit_id": hit_id, "answers": {"instruction": "Name the bird"}})
    assert client.get_assignment(AssignmentId=worked.json()["result"])["Assignment"][
        "AssignmentStatus"] == "Submitted"


def test_prolific_fake_from_the_command_line(run_fake):
    url = run_fake("fakes.prolific", "--token", "cli-token", "--balance", "5000")
    headers = {"Authorization": "Token cli-token"}
    (workspace,) = httpx.get(f"{url}/api/v1/workspaces/", headers=headers).json()["results"]
    balance = httpx.get(f"{url}/api/v1/workspaces/{workspace['id']}/balance/", headers=headers).json()
    assert balance["total_balance"] == 5000
    assert httpx.get(f"{url}/api/v1/users/me/",
                     headers={"Authorization": "Token other"}).status_code == 401
