"""Bad input of every kind gets a 4xx with a message a person can act on, and creates no task row."""

from __future__ import annotations

import json
from typing import Any

import pytest

TOO_LONG = "echo " + "x" * 16_000


def case(name: str, body: Any, *expected: str, status: int = 422, marks: Any = ()) -> Any:
    """One bad submission: the body (a dict is sent as JSON, a str as raw bytes) and what the answer says."""
    return pytest.param(body, status, expected, id=name, marks=marks)


BAD_SPECS = [
    case("empty command", {"command": ""}, "command must not be empty"),
    case("whitespace-only command", {"command": "   \t "}, "command must not be empty"),
    case("missing command", {"gpus": 1}, "command is required"),
    case("command of the wrong type", {"command": ["echo", "hi"]}, "command", "valid string"),
    case("NUL byte in the command", {"command": "echo a\x00b"}, "command must not contain NUL bytes"),
    case("command sent to the background", {"command": "python train.py &"}, "drop the '&'"),
    case("huge command", {"command": TOO_LONG}, "command", "at most 16000 characters"),
    case("negative gpus", {"command": "x", "gpus": -1}, "gpus", "greater than or equal to 0"),
    case(
        "more gpus than the largest node",
        {"command": "x", "gpus": 9},
        "gpus must be between 0 and 4 on this cluster",
    ),
    case("absurd gpus", {"command": "x", "gpus": 1000}, "gpus", "less than or equal to 64"),
    case(
        "gpus as a word", {"command": "x", "gpus": "two"}, "gpus: Input should be a valid integer (got 'two')"
    ),
    case("gpus as a fraction", {"command": "x", "gpus": 1.5}, "gpus", "valid integer"),
    case(
        "gpus as a boolean",
        {"command": "x", "gpus": True},
        "gpus",
    ),
    case("zero gpu memory", {"command": "x", "gpu_memory_gb": 0}, "gpu_memory_gb", "greater than 0"),
    case("negative gpu memory", {"command": "x", "gpu_memory_gb": -8}, "gpu_memory_gb", "greater than 0"),
    case(
        "more gpu memory than any GPU",
        {"command": "x", "gpu_memory_gb": 80},
        "no GPU on this cluster has 80 GB",
    ),
    case(
        "gpu memory on a CPU-only task",
        {"command": "x", "gpus": 0, "gpu_memory_gb": 8},
        "gpu_memory_gb needs gpus",
    ),
    case(
        "unknown priority",
        {"command": "x", "priority": "asap"},
        "priority",
        "'low', 'normal', 'high' or 'urgent'",
    ),
    case(
        "unknown field",
        {"command": "x", "gpu": 2},
        "unknown field 'gpu' (did you mean 'gpus'?)",
        "allowed fields",
    ),
    case(
        "team in the spec",
        {"command": "x", "team": "other"},
        "'team' is not a spec field: a task's team and user are those of the API token",
    ),
    case("malformed JSON", '{"command": "echo hi",', "the request body is not valid JSON"),
    case("JSON array body", '[{"command": "echo hi"}]', "the request body must be a JSON object"),
    case("JSON string body", '"echo hi"', "the request body must be a JSON object"),
    case("JSON number body", "42", "the request body must be a JSON object"),
    case("JSON null body", "null", "the request body must be a JSON object"),
    case("empty body", "", "the request body is required"),
    case("not_before not a date", {"command": "x", "not_before": "soon"}, "not_before", "valid datetime"),
    case(
        "deadline before not_before",
        {"command": "x", "not_before": "2030-01-02T00:00:00Z", "deadline": "2030-01-01T00:00:00Z"},
        "deadline must be after not_before",
    ),
    case(
        "deadline in the past",
        {"command": "x", "deadline": "2020-01-01T00:00:00Z"},
        "deadline 2020-01-01 00:00",
        "is in the past; give a later time or leave it out",
    ),
    case(
        "not_before in year 9999",
        {"command": "x", "not_before": "9999-12-31T23:59:59-05:00"},
        "not_before 9999-12-31 23:59",
        "is more than 10 years ahead; give a time before",
    ),
    case(
        "deadline in year 9999",
        {"command": "x", "deadline": "9999-12-31T23:59:59Z"},
        "deadline 9999-12-31 23:59",
        "is more than 10 years ahead",
    ),
    case(
        "both conda and docker",
        {"command": "x", "conda_env": "torch", "docker_image": "pytorch/pytorch"},
        "choose conda_env or docker_image, not both",
    ),
    case("docker image with a space", {"command": "x", "docker_image": "my image"}, "not a valid image name"),
    case(
        "docker image like an option", {"command": "x", "docker_image": "-v/:/host"}, "not a valid image name"
    ),
    case(
        "invalid env name",
        {"command": "x", "env": {"1BAD-NAME": "v"}},
        "env name '1BAD-NAME' must be at most 128 letters",
    ),
    case(
        "reserved env name", {"command": "x", "env": {"NIGHTSHIFT_TASK_ID": "7"}}, "set by nightshift itself"
    ),
    case(
        "CUDA_VISIBLE_DEVICES in env",
        {"command": "x", "env": {"CUDA_VISIBLE_DEVICES": "0"}},
        "set by nightshift",
    ),
    case(
        "env as a list",
        {"command": "x", "env": ["A=1"]},
        "env must be a mapping of names to values",
    ),
    case("env value not a string", {"command": "x", "env": {"A": [1]}}, "env.A", "valid string"),
    case("env value a boolean", {"command": "x", "env": {"DEBUG": True}}, "env.DEBUG is a boolean: quote it"),
    case(
        "depends_on a missing task",
        {"command": "x", "depends_on": [999]},
        "depends_on names task 999",
        "does not exist",
    ),
    case("depends_on a non-positive id", {"command": "x", "depends_on": [0]}, "depends_on holds task ids"),
    case("negative retries", {"command": "x", "retries": -1}, "retries", "greater than or equal to 0"),
    case(
        "zero time limit", {"command": "x", "time_limit_minutes": 0}, "time_limit_minutes", "greater than 0"
    ),
    case(
        "time limit NaN",
        {"command": "x", "time_limit_minutes": "NaN"},
        "time_limit_minutes must be a number of minutes (got 'NaN')",
    ),
    case(
        "time limit a bare JSON NaN",
        '{"command": "x", "time_limit_minutes": NaN}',
        "time_limit_minutes must be a number of minutes",
    ),
    case(
        "estimate infinite",
        {"command": "x", "estimated_minutes": "inf"},
        "estimated_minutes must be a number of minutes (got 'inf')",
    ),
    case(
        "gpu memory infinite",
        '{"command": "x", "gpu_memory_gb": Infinity}',
        "gpu_memory_gb must be a number of GB",
    ),
    case("relative workdir", {"command": "x", "workdir": "data/run"}, "workdir must be an absolute path"),
    case("name with a newline", {"command": "x", "name": "a\nb"}, "name must be 1-120 letters"),
]


@pytest.mark.parametrize(("body", "status", "expected"), BAD_SPECS)
def test_a_bad_submission_gets_a_4xx_that_names_the_problem_and_creates_no_task(
    client, cluster, alice, four_gpu_node, body, status, expected
):
    if isinstance(body, str):
        response = client.post(
            "/api/v1/tasks", content=body, headers={**alice, "Content-Type": "application/json"}
        )
    else:
        response = client.post(
            "/api/v1/tasks", content=json.dumps(body), headers={**alice, "Content-Type": "application/json"}
        )

    assert response.status_code == status, response.text
    detail = response.json()["detail"]
    assert isinstance(detail, str)
    for words in expected:
        assert words in detail
    assert "Traceback" not in detail
    assert cluster.tasks.count_by_status() == {}
    assert cluster.queue.length() == 0


def test_each_error_item_names_its_field(client, alice):
    response = client.post(
        "/api/v1/tasks", json={"command": "", "gpus": -1, "priority": "asap"}, headers=alice
    )

    assert response.status_code == 422
    fields = {item["field"] for item in response.json()["errors"]}
    assert fields == {"command", "gpus", "priority"}


def test_malformed_json_is_not_blamed_on_a_field(client, alice):
    response = client.post(
        "/api/v1/tasks", content='{"command": "x",', headers={**alice, "Content-Type": "application/json"}
    )

    assert response.status_code == 422
    assert [item["field"] for item in response.json()["errors"]] == [None]


def test_an_overlong_idempotency_key_is_refused(client, cluster, alice):
    response = client.post(
        "/api/v1/tasks", json={"command": "x"}, headers={**alice, "Idempotency-Key": "k" * 200}
    )

    assert response.status_code == 422
    assert "idempotency-key" in response.json()["detail"].lower()
    assert cluster.tasks.count_by_status() == {}


def test_without_any_node_the_gpu_limit_is_the_configured_maximum(client, cluster, alice):
    response = client.post("/api/v1/tasks", json={"command": "x", "gpus": 9}, headers=alice)

    assert response.status_code == 422
    assert "gpus must be between 0 and 8 on this cluster" in response.json()["detail"]
    assert cluster.tasks.count_by_status() == {}


@pytest.mark.parametrize(
    ("params", "expected"),
    [
        ({"not_before": "someday"}, "not_before: Input should be a valid datetime"),
        ({"not_before": "9999-12-31T23:59:59-05:00"}, "not_before 9999-12-31 23:59"),
        ({"offpeak": "maybe"}, "offpeak: Input should be a valid boolean"),
        ({"gpus": "-1"}, "gpus: Input should be greater than or equal to 0"),
    ],
)
def test_a_bad_estimate_question_gets_a_422_that_names_the_parameter(client, alice, params, expected):
    response = client.get("/api/v1/estimate", params=params, headers=alice)

    assert response.status_code == 422
    assert response.json()["detail"].startswith(expected)


def test_a_json_body_sent_without_its_content_type_says_to_send_the_header(client, cluster, alice):
    # curl -d '{"command": "echo"}' sends application/x-www-form-urlencoded
    form = client.post(
        "/api/v1/tasks",
        content=b'{"command": "echo"}',
        headers={**alice, "Content-Type": "application/x-www-form-urlencoded"},
    )
    not_an_object = client.post("/api/v1/tasks", json=["echo"], headers=alice)

    assert form.status_code == 422
    assert form.json()["detail"] == (
        "the request body was sent as application/x-www-form-urlencoded, not JSON: send the header "
        "Content-Type: application/json (curl: -H 'Content-Type: application/json')"
    )
    assert not_an_object.json()["detail"] == "the request body must be a JSON object with the task's fields"
    assert cluster.tasks.count_by_status() == {}
