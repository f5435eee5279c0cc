"""The SQS and SNS FIFO clients against moto's server, which speaks AWS's wire protocol and,
past its first three requests, checks every SigV4 signature against the IAM keys it made.

The clients sign with botocore (credentials from the standard chain: here the
environment); a request signed with a wrong secret is refused (403) and lands nothing.
SendMessage with the same MessageDeduplicationId lands once on the queue, as AWS dedupes
it; Publish to a FIFO topic answers its MessageId and SequenceNumber.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import socket
import subprocess
import sys
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

botocore_session = pytest.importorskip("botocore.session")
pytest.importorskip("moto.server")

from botocore.credentials import Credentials  # noqa: E402

from ticketiq_pg.testing.apps import wait_for  # noqa: E402
from ticketiq_pg.vendors.clients import SNSFifo, SQSFifo, VendorRejected  # noqa: E402

REGION = "us-east-1"
EVERYTHING = {"Version": "2012-10-17",
              "Statement": [{"Effect": "Allow", "Action": "*", "Resource": "*"}]}


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _answers(port: int) -> bool:
    with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", port), 0.2):
        return True
    return False


@pytest.fixture(scope="module")
def moto() -> Iterator[dict[str, Any]]:
    """moto in server mode; its first 3 requests (the IAM user, key and policy made here)
    go unchecked, every later one must carry a valid SigV4 signature of that key."""
    port = _free_port()
    server = shutil.which("moto_server", path=os.path.dirname(sys.executable))
    argv = [server] if server else [sys.executable, "-m", "moto.server"]
    env = {**os.environ, "INITIAL_NO_AUTH_ACTION_COUNT": "3"}
    proc = subprocess.Popen([*argv, "-H", "127.0.0.1", "-p", str(port)], env=env,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        wait_for("moto's server to listen", lambda: _answers(port), 60)
        url = f"http://127.0.0.1:{port}"
        session = botocore_session.get_session()

        def client(service: str, key: str = "bootstrap", secret: str = "bootstrap") -> Any:
            return session.create_client(service, region_name=REGION, endpoint_url=url,
                                         aws_access_key_id=key, aws_secret_access_key=secret)

        iam = client("iam")
        iam.create_user(UserName="ticketiq")
        made = iam.create_access_key(UserName="ticketiq")["AccessKey"]
        iam.put_user_policy(UserName="ticketiq", PolicyName="all",
                            PolicyDocument=json.dumps(EVERYTHING))
        key, secret = made["AccessKeyId"], made["SecretAccessKey"]
        sqs, sns = client("sqs", key, secret), client("sns", key, secret)
        queue = sqs.create_queue(QueueName="runs.fifo",
                                 Attributes={"FifoQueue": "true"})["QueueUrl"]
        topic = sns.create_topic(Name="runs.fifo",
                                 Attributes={"FifoTopic": "true"})["TopicArn"]
        # The topic delivers to a queue of its own: what it published lands there.
        fanout = sqs.create_queue(QueueName="fanout.fifo",
                                  Attributes={"FifoQueue": "true"})["QueueUrl"]
        arn = sqs.get_queue_attributes(QueueUrl=fanout, AttributeNames=["QueueArn"])
        sns.subscribe(TopicArn=topic, Protocol="sqs",
                      Endpoint=arn["Attributes"]["QueueArn"],
                      Attributes={"RawMessageDelivery": "true"})
        yield {"url": url, "key": key, "secret": secret, "sqs": sqs, "queue": queue,
               "topic": topic, "fanout": fanout}
    finally:
        proc.kill()
        proc.wait()


@pytest.fixture
def aws_env(moto: dict[str, Any], monkeypatch: pytest.MonkeyPatch) -> dict[str, Any]:
    """The key in the environment, where botocore's standard chain finds it."""
    for name in ("AWS_PROFILE", "AWS_SESSION_TOKEN", "AWS_SECURITY_TOKEN"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", moto["key"])
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", moto["secret"])
    monkeypatch.setenv("AWS_CONFIG_FILE", os.devnull)
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", os.devnull)
    return moto


def received(moto: dict[str, Any], queue: str = "queue") -> list[dict[str, Any]]:
    answer = moto["sqs"].receive_message(QueueUrl=moto[queue], MaxNumberOfMessages=10,
                                         VisibilityTimeout=0)
    return answer.get("Messages", [])


async def test_sqs_send_message_is_signed_and_deduped_by_aws(aws_env: dict[str, Any]) -> None:
    async with httpx.AsyncClient(timeout=10) as http:
        sqs = SQSFifo.for_aws(http, REGION, endpoint_url=aws_env["url"])
        first = await sqs.send_message(aws_env["queue"], "run r-1 finished", "r-1", "key-1")
        again = await sqs.send_message(aws_env["queue"], "run r-1 finished", "r-1", "key-1")
        assert first["MessageId"] and again["MessageId"] and first["SequenceNumber"]

        forged = SQSFifo.for_aws(http, REGION, endpoint_url=aws_env["url"],
                                 credentials=Credentials(aws_env["key"], "not-the-secret"))
        with pytest.raises(VendorRejected) as refused:
            await forged.send_message(aws_env["queue"], "forged", "r-2", "key-2")
        assert refused.value.status == 403
    # What landed, from the queue itself: the message once, nothing forged.
    assert [m["Body"] for m in received(aws_env)] == ["run r-1 finished"]


async def test_sns_publish_to_a_fifo_topic_is_signed(aws_env: dict[str, Any]) -> None:
    async with httpx.AsyncClient(timeout=10) as http:
        sns = SNSFifo.for_aws(http, REGION, endpoint_url=aws_env["url"])
        published = await sns.publish(aws_env["topic"], "run r-1 finished", "r-1", "key-1")
        again = await sns.publish(aws_env["topic"], "run r-1 finished", "r-1", "key-1")
        assert published["MessageId"] and again["MessageId"]

        forged = SNSFifo.for_aws(http, REGION, endpoint_url=aws_env["url"],
                                 credentials=Credentials(aws_env["key"], "not-the-secret"))
        with pytest.raises(VendorRejected) as refused:
            await forged.publish(aws_env["topic"], "forged", "r-2", "key-2")
        assert refused.value.status == 403
    # What landed where the topic delivers: the message once, nothing forged.
    assert [m["Body"] for m in received(aws_env, "fanout")] == ["run r-1 finished"]


def test_without_credentials_the_client_says_so(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_PROFILE",
                 "AWS_SESSION_TOKEN", "AWS_CONTAINER_CREDENTIALS_RELATIVE_URI",
                 "AWS_CONTAINER_CREDENTIALS_FULL_URI", "AWS_WEB_IDENTITY_TOKEN_FILE"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("AWS_CONFIG_FILE", os.devnull)
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", os.devnull)
    monkeypatch.setenv("AWS_EC2_METADATA_DISABLED", "true")
    with pytest.raises(ValueError, match="no AWS credentials found"):
        SQSFifo.for_aws(httpx.AsyncClient(), REGION)
