"""The web planner: ``create_app()`` builds the FastAPI app, ``serve()`` runs it with uvicorn.

JSON API (OpenAPI schema at ``/openapi.json``): ``POST /api/estimate | plan | scale | cost |
quotes``, ``GET /api/catalog/{models|gpus|links|sites}``; ``POST /api/export?format=xlsx|csv`` answers the
plan of ``/api/plan`` as a spreadsheet. Every error is ``{"field", "message"}``: a user mistake is HTTP 422
(pydantic's ``detail`` list is kept beside them; a body that is not UTF-8 JSON too), a body over 64 KB is 413,
an unknown path 404 and a wrong method 405,
a planner whose queue is full (a team's burst waits in it), or busy for longer than the wait limit, is 503 with
``Retry-After``; identical requests are computed once (``web/shared.py``). The page
at ``/`` posts to ``/ui/plan``, which answers the same computation as an HTML fragment with its charts, streamed:
its answer card first, the rest when made.

The computations run in a pool of worker processes started with the app (``web/pool.py``); each endpoint
hands its validated request to a job of ``web/jobs.py`` and returns what comes back.
"""

from __future__ import annotations

import itertools
import json
import math
from collections.abc import AsyncIterator, Callable, Mapping
from contextlib import asynccontextmanager
from functools import cache
from pathlib import Path
from typing import Any, Literal

from fastapi import FastAPI, Query, Request
from fastapi.encoders import jsonable_encoder
from fastapi.exceptions import RequestValidationError
from fastapi.responses import FileResponse, HTMLResponse, JSONResponse, Response, StreamingResponse
from fastapi.staticfiles import StaticFiles
from starlette.exceptions import HTTPException as StarletteHTTPException

from trainsizer.errors import InputError
from trainsizer.report.export import XLSX_MEDIA_TYPE
from trainsizer.web import jobs, service
from trainsizer.web import schemas as s
from trainsizer.web.errors import Busy, validation_error_body
from trainsizer.web.labels import resolve
from trainsizer.web.middleware import MAX_BODY_BYTES, BodyGuard
from trainsizer.web.pool import WAIT_S, Planner
from trainsizer.web.shared import CACHED_ANSWERS

STATIC = Path(__file__).parent / "static"
# the field an HTTP error of the framework (no route, wrong method, a body it cannot read) names
HTTP_ERROR_FIELDS = {404: "path", 405: "method"}
ERRORS: dict[int | str, dict[str, Any]] = {
    413: {"description": "Request body over 64 KB"},
    422: {"description": "Invalid input: {field, message}"},
    503: {"description": "The planner is busy (its queue is full or the wait ran out): retry after Retry-After s"},
}


def _finite(value: Any) -> Any:
    """JSON has no NaN or infinity: an unbounded quantity (e.g. a break-even that never comes) is null."""
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, dict):
        return {k: _finite(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_finite(v) for v in value]
    return value


class SafeJSONResponse(JSONResponse):
    def render(self, content: Any) -> bytes:
        try:  # endpoints return plain JSON data (FastAPI serialised it): the fast path
            text = json.dumps(content, ensure_ascii=False, allow_nan=False, separators=(",", ":"))
        except (TypeError, ValueError):
            text = json.dumps(_finite(jsonable_encoder(content)), ensure_ascii=False, allow_nan=False,
                              separators=(",", ":"))
        return text.encode("utf-8")


def _json(answer: Any) -> Any:
    """A job's answer: JSON the worker encoded (``jobs.json_bytes``) goes out as it is, without FastAPI's
    validation and encoding of the whole answer in the server's process; other data (a test's stub job) as before."""
    if isinstance(answer, bytes):
        return Response(answer, media_type="application/json")
    return answer


def _error(status: int, field: str, message: str, **extra: Any) -> SafeJSONResponse:
    return SafeJSONResponse({"field": field, "message": message, **extra}, status_code=status)


def _install_handlers(app: FastAPI) -> None:
    @app.exception_handler(InputError)
    async def input_error(request: Request, exc: InputError) -> SafeJSONResponse:
        from trainsizer.web.errors import message_of

        field, message = exc.field or "body", message_of(exc)
        if request.url.path.startswith("/ui/"):  # shown on the page: in its language, no CLI flags in its words
            from trainsizer.web.render import page_error

            field, message, extra = page_error(exc, resolve(request.query_params.get("lang")))
            return _error(422, field, message, **extra)
        return _error(422, field, message)

    @app.exception_handler(RequestValidationError)
    async def validation_error(request: Request, exc: RequestValidationError) -> SafeJSONResponse:
        errors = list(exc.errors())
        lang = resolve(request.query_params.get("lang")) if request.url.path.startswith("/ui/") else "en"
        body = validation_error_body(errors, lang)  # the page's language on the page, English in the API
        detail = [{k: v for k, v in e.items() if k in ("loc", "msg", "type")} for e in errors[:20]]
        return _error(422, body["field"], body["message"], detail=detail)

    @app.exception_handler(StarletteHTTPException)
    async def http_error(_: Request, exc: StarletteHTTPException) -> SafeJSONResponse:
        """The framework's own errors (404, 405, 400 a body it cannot read) in the one shape {field, message}."""
        response = _error(exc.status_code, HTTP_ERROR_FIELDS.get(exc.status_code, "body"), str(exc.detail))
        response.headers.update(exc.headers or {})  # 405's Allow
        return response

    @app.exception_handler(Busy)
    async def busy(_: Request, exc: Busy) -> SafeJSONResponse:
        response = _error(503, "", str(exc))
        response.headers["Retry-After"] = str(exc.retry_after_s)
        return response

    @app.exception_handler(ArithmeticError)
    async def arithmetic(_: Request, exc: ArithmeticError) -> SafeJSONResponse:
        return _error(422, "body", f"the inputs are outside what the model can compute ({type(exc).__name__})")

    @app.exception_handler(Exception)
    async def unexpected(_: Request, exc: Exception) -> SafeJSONResponse:  # a bug: no traceback to the user
        return _error(500, "", f"internal error ({type(exc).__name__}); please report the request")


def create_app(planner_slots: int = 2, busy_wait_s: float = WAIT_S, max_body_bytes: int = MAX_BODY_BYTES,
               workers: int | None = None, queue_limit: int | None = None,
               job_functions: Mapping[str, Callable[..., Any]] | None = None,
               cached_answers: int = CACHED_ANSWERS) -> FastAPI:
    """The app. Its computations run in ``workers`` processes (default: one per core; 0: in the server's
    threads, ``planner_slots`` at once), one per worker at a time; ``queue_limit`` more wait (default: a team's
    burst, ``pool.default_queue``) for at most ``busy_wait_s``; beyond either, 503. Identical requests are
    computed once, and the last ``cached_answers`` answers are served again (``web/shared.py``; 0: none kept).
    ``job_functions`` replaces functions of
    ``web/jobs.py`` by name, ``warm`` (a worker's start) included (tests: a slow stub; a worker must be able
    to import it)."""
    run_job = {name: getattr(jobs, name) for name in (*jobs.NAMES, "warm")} | dict(job_functions or {})
    planner = Planner(workers, queue_limit, busy_wait_s, planner_slots, warm=run_job["warm"],
                      cached_answers=cached_answers)

    @asynccontextmanager
    async def lifespan(_: FastAPI) -> AsyncIterator[None]:
        import anyio.to_thread

        threads = anyio.to_thread.current_default_thread_limiter()  # each waiting request holds a thread
        threads.total_tokens = max(threads.total_tokens, planner.capacity + 16)
        await anyio.to_thread.run_sync(planner.start)
        try:
            yield
        finally:
            await anyio.to_thread.run_sync(planner.close)

    # FastAPI's /docs and /redoc pages load their scripts from a CDN: off, the page must work offline
    app = FastAPI(title="trainsizer", version="0.1.0", default_response_class=SafeJSONResponse,
                  docs_url=None, redoc_url=None, lifespan=lifespan,
                  description="Size GPU training jobs: per-GPU memory, step time, plans, servers, site fit and "
                              "cost. Errors name the field: 422 {field, message}.")
    app.state.planner = planner
    app.state.limiter = planner.limiter
    _install_handlers(app)
    app.add_middleware(BodyGuard, max_bytes=max_body_bytes)
    app.mount("/static", StaticFiles(directory=STATIC), name="static")
    _api_routes(app, planner, run_job)
    _page_routes(app, planner, run_job)
    return app


def _api_routes(app: FastAPI, planner: Planner, job: dict[str, Callable[..., Any]]) -> None:
    @app.post("/api/estimate", responses=ERRORS, tags=["api"])
    def estimate(req: s.EstimateIn) -> dict[str, Any]:
        """Per-GPU memory, fit limits and step time of one scenario (validation/FORMAT.md)."""
        return _json(planner.answer("estimate", job["estimate"], req))

    @app.post("/api/plan", responses=ERRORS, tags=["api"])
    def plan(req: s.PlanIn) -> dict[str, Any]:
        """Search GPU type x count x node shape x layout; rank with servers, site fit and cost."""
        return _json(planner.answer("plan", job["plan"], req))

    @app.post("/api/scale", responses=ERRORS, tags=["api"])
    def scale(req: s.ScaleIn) -> dict[str, Any]:
        """Tokens/s and scaling efficiency vs GPU count, per link option."""
        return _json(planner.answer("scale", job["scale"], req))

    @app.post("/api/cost", responses=ERRORS, tags=["api"])
    def cost(req: s.CostIn) -> dict[str, Any]:
        """Servers, site fit and rent vs buy of one hardware option (the job's fastest layout on it)."""
        return _json(planner.answer("cost", job["cost"], req))

    @app.post("/api/quotes", responses=ERRORS, tags=["api"])
    def quotes(req: s.QuotesIn) -> dict[str, Any]:
        """Rental offers compared on delivered compute and per training run, with risk flags."""
        return _json(planner.answer("quotes", job["quotes"], req))

    @app.post("/api/export", responses={**ERRORS, 200: {"description": "The plan's bill of materials and cost",
                                                         "content": {XLSX_MEDIA_TYPE: {}, "text/csv": {}}}},
              response_class=Response, tags=["api"])
    def export(req: s.PlanIn, format: Literal["xlsx", "csv", "yaml"] = Query("xlsx"),
               lang: str | None = Query(None, max_length=10)) -> Response:
        """The plan of ``/api/plan`` (same body) as a spreadsheet: sheets Recommendation, Bill of materials,
        Options and Assumptions; ``format=csv`` gives the same tables in one CSV file; ``lang=zh-CN``: sheets,
        headers, names and messages in Chinese; ``format=yaml``: the recommended option as a job file
        (trainsizer-job.yaml, what the verification steps' commands take)."""
        body, media = planner.answer("export", job["export"], req, format, resolve(lang))
        name = "trainsizer-job.yaml" if format == "yaml" else f"trainsizer-plan.{format}"
        return Response(body, media_type=media, headers={"Content-Disposition": f'attachment; filename="{name}"'})

    @app.get("/api/catalog/{kind}", tags=["api"])
    async def catalog(kind: Literal["models", "gpus", "links", "sites"]) -> list[dict[str, Any]]:
        """The catalogs: model presets, GPUs, links, sites."""
        return service.catalog(kind)


def _page_routes(app: FastAPI, planner: Planner, job: dict[str, Callable[..., Any]]) -> None:
    @app.post("/ui/plan", response_class=HTMLResponse, responses=ERRORS, tags=["page"])
    def ui_plan(req: s.UiPlanIn, lang: str | None = Query(None, max_length=10)) -> Response:
        """The page's result: the plan as an HTML fragment with its charts, streamed in two parts: the start up to
        the answer card as soon as the plan is made, then the charts, rankings and details (together: one
        fragment). An input error or a full queue comes before any part, as JSON with its status."""
        parts = planner.answer_in_parts("ui_plan", job["ui_answer"], job["ui_rest"], req, resolve(lang))
        first = next(parts)  # the plan is made here: its errors are this request's answer (422, 503)
        return StreamingResponse(itertools.chain([first], parts), media_type="text/html; charset=utf-8")

    @app.get("/favicon.ico", include_in_schema=False)
    async def favicon() -> FileResponse:
        return FileResponse(STATIC / "favicon.svg", media_type="image/svg+xml")

    @app.get("/", response_class=HTMLResponse, tags=["page"])
    async def index(request: Request, lang: str | None = Query(None, max_length=10)) -> HTMLResponse:
        """The planner page."""
        return HTMLResponse(_index_html(resolve(lang, request.headers.get("accept-language"))))


@cache
def _index_html(lang: str) -> str:
    from trainsizer.hardware.market import default_market
    from trainsizer.i18n import default_currency
    from trainsizer.web.render import FORM_CHOICES, index_page
    from trainsizer.workflows import catalogs

    # each currency's market on this page (a Chinese page's is China's whatever the currency) and the site it hosts
    # bought hardware in: the page starts at its own currency's (render.index_page), and where the user switches the
    # currency before touching the site, the site follows (app.js): an English page's CNY plans in a Chinese hall
    currency_sites = {code: catalogs.default_site(market=default_market(code, None, lang).value)
                      for code in FORM_CHOICES["currencies"]}
    return index_page(lang, [m["id"] for m in catalogs.model_rows()], catalogs.gpu_rows(), catalogs.site_rows(),
                      currency_sites[default_currency(lang)], catalogs.voucher_rows(), currency_sites)


def serve(host: str = "127.0.0.1", port: int = 8000, workers: int | None = None, queue_limit: int | None = None,
          access_log: bool = True) -> None:
    """Run the planner with uvicorn (loopback by default: it has no authentication); ``workers`` processes
    compute the plans (default: one per core), ``queue_limit`` requests wait (default: ``pool.default_queue``)."""
    import uvicorn

    from trainsizer.web.head_timeout import server_settings

    uvicorn.run(create_app(workers=workers, queue_limit=queue_limit), host=host, port=port, log_level="info",
                access_log=access_log, **server_settings())
