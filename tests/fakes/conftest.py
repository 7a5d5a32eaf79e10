"""Fixtures for the crowd-provider fakes: each test gets a fresh fake and a real client."""
from __future__ import annotations

import boto3
import httpx
import pytest
from botocore.config import Config

from fakes.mturk import FakeMTurkServer
from fakes.prolific import FakeProlificServer

EXTERNAL_QUESTION = (
    '<ExternalQuestion xmlns="http://mechanicalturk.amazonaws.com/AWSMechanicalTurkDataSchemas/'
    '2006-07-14/ExternalQuestion.xsd"><ExternalURL>{url}</ExternalURL>'
    "<FrameHeight>800</FrameHeight></ExternalQuestion>"
)
TASK_URL = "https://crowdbench.example.org/task/17/?round=3&amp;lang=en"


def external_question(url: str = TASK_URL) -> str:
    return EXTERNAL_QUESTION.format(url=url)


# One session for every client: it caches the loaded service model, which is slow to load.
_BOTO_SESSION = boto3.session.Session()


def mturk_client_for(fake: FakeMTurkServer, total_attempts: int = 3):
    # Standard retry mode: throttling and 5xx answers are retried.
    return _BOTO_SESSION.client(
        "mturk", endpoint_url=fake.url, region_name="us-east-1",
        aws_access_key_id="test", aws_secret_access_key="test",
        config=Config(retries={"mode": "standard", "total_max_attempts": total_attempts}),
    )


@pytest.fixture
def mturk_fake():
    with FakeMTurkServer(seed=7) as fake:
        yield fake


@pytest.fixture
def mturk(mturk_fake):
    return mturk_client_for(mturk_fake)


@pytest.fixture
def hit_params():
    """CreateHIT arguments for a valid HIT; tests override what they exercise."""
    return {
        "Title": "Write an instruction for this image",
        "Description": "Look at the image and write one instruction a model should follow.",
        "Keywords": "image, instruction, writing",
        "Reward": "0.50",
        "AssignmentDurationInSeconds": 1800,
        "LifetimeInSeconds": 86400,
        "AutoApprovalDelayInSeconds": 259200,
        "MaxAssignments": 3,
        "Question": external_question(),
    }


@pytest.fixture
def prolific_fake():
    with FakeProlificServer(seed=11, api_token="researcher-token") as fake:
        yield fake


@pytest.fixture
def prolific(prolific_fake):
    with httpx.Client(base_url=prolific_fake.url, timeout=10,
                      headers={"Authorization": "Token researcher-token"}) as client:
        yield client


@pytest.fixture
def study_body():
    """A valid draft study in the current API's shape."""
    return {
        "name": "Rank five image reviews",
        "internal_name": "irr-round-3",
        "description": "Read five reviews of an image and rank them from most to least helpful.",
        "external_study_url": ("https://crowdbench.example.org/prolific/3/?PROLIFIC_PID="
                               "{{%PROLIFIC_PID%}}&STUDY_ID={{%STUDY_ID%}}"
                               "&SESSION_ID={{%SESSION_ID%}}"),
        "prolific_id_option": "url_parameters",
        "completion_codes": [
            {"code": "C7A1B2", "code_type": "COMPLETED",
             "actions": [{"action": "MANUALLY_REVIEW"}]},
            {"code": "FAILCHK", "code_type": "FAILED_ATTENTION_CHECK",
             "actions": [{"action": "MANUALLY_REVIEW"}]},
        ],
        "total_available_places": 5,
        "estimated_completion_time": 10,
        "reward": 300,
        "device_compatibility": ["desktop"],
    }
