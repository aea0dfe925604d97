"""The FastAPI application: routes under /api/v1, /healthz at the root, errors mapped in one place."""

from __future__ import annotations

from fastapi import APIRouter, FastAPI
from fastapi.responses import JSONResponse, PlainTextResponse, Response
from prometheus_client import CONTENT_TYPE_LATEST, generate_latest

from api.body_limit import BodySizeLimit
from api.empty_query import DropEmptyQueryValues
from api.errors import install_error_handlers
from api.routes import cluster as cluster_routes
from api.routes import forecasts as forecast_routes
from api.routes import me as me_routes
from api.routes import nodes as node_routes
from api.routes import reports as report_routes
from api.routes import secrets as secret_routes
from api.routes import sweeps as sweep_routes
from api.routes import tasks as task_routes
from api.schemas import ErrorPublic
from scheduler import __version__
from scheduler.cluster_state import UsageCache
from scheduler.metrics import registry_for
from scheduler.service import Cluster

ERROR_RESPONSES: dict[int | str, dict[str, object]] = {
    code: {"model": ErrorPublic} for code in (401, 404, 409, 413, 422, 429, 503)
}


def create_app(cluster: Cluster, *, ui: bool = True) -> FastAPI:
    """The API app serving `cluster` (the caller owns the cluster's life cycle), with the chat UI at /ui."""
    app = FastAPI(
        title="nightshift",
        version=__version__,
        description="A GPU job queue for small teams. Authenticate with `Authorization: Bearer <token>`.",
    )
    app.state.cluster = cluster
    app.state.usage = UsageCache(cluster)
    install_error_handlers(app)
    app.add_middleware(BodySizeLimit, max_mb=cluster.settings.max_request_mb)
    app.add_middleware(DropEmptyQueryValues)

    v1 = APIRouter(prefix="/api/v1", responses=ERROR_RESPONSES)
    v1.include_router(sweep_routes.batch_router)  # before /tasks/{task_id}
    v1.include_router(task_routes.router)
    v1.include_router(sweep_routes.router)
    v1.include_router(sweep_routes.results_router)
    v1.include_router(cluster_routes.router)
    v1.include_router(forecast_routes.router)
    v1.include_router(node_routes.router)
    v1.include_router(report_routes.router)
    v1.include_router(me_routes.router)
    v1.include_router(secret_routes.router)
    app.include_router(v1)

    registry = registry_for(cluster)
    cluster_zone_name = str(cluster.zone)  # a ZoneInfo prints its IANA name

    @app.get("/metrics", tags=["health"], response_class=PlainTextResponse)
    def metrics() -> PlainTextResponse:
        """Prometheus metrics: queue, outcomes, waits, GPUs, workers, scheduler passes."""
        return PlainTextResponse(generate_latest(registry).decode(), media_type=CONTENT_TYPE_LATEST)

    @app.get("/favicon.ico", include_in_schema=False)
    def favicon() -> Response:
        """No icon, said as such: a browser asks for one on every page of the chat, and a 404 there is an
        error in its console."""
        return Response(status_code=204)

    @app.get("/healthz", tags=["health"])
    def healthz() -> JSONResponse:
        """200 when the database and Redis answer, 503 otherwise; with the cluster's zone, in which clients
        read and show times (`--after 23:00` is 23:00 where the GPUs are, as the chat reads it), its
        off-peak windows (what "tonight" means to a chat served elsewhere), and
        whether a scheduler runs (said, not a 503: `nightshift api` alone is healthy, and a scheduler
        may wait for the API to be healthy before it starts)."""
        checks = {"database": "ok", "redis": "ok"}
        scheduler = "unknown"
        try:
            cluster.tasks.count_by_status()
        except Exception as exc:
            checks["database"] = f"error: {type(exc).__name__}"
        try:
            cluster.queue.client.ping()
            scheduler = "running" if cluster.queue.scheduler_running() else "none running"
        except Exception as exc:
            checks["redis"] = f"error: {type(exc).__name__}"
        healthy = all(value == "ok" for value in checks.values())
        return JSONResponse(
            {
                "status": "ok" if healthy else "degraded",
                **checks,
                "scheduler": scheduler,
                "timezone": cluster_zone_name,
                "offpeak": cluster.settings.offpeak,  # the windows "tonight" means, for clients elsewhere
            },
            status_code=200 if healthy else 503,
        )

    if ui:
        from assistant.ui import mount_ui

        mount_ui(app, cluster.settings)
    return app
