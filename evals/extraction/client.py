"""The HTTP calls of one evaluated user: the recall harness's import, plus extraction
runs and the stored facts."""

from __future__ import annotations

from collections import Counter

from evals.recall.client import RecallClient, check_status

MAX_RUNS = 50  # extraction runs per user: each takes up to 2,000 pending messages
FACT_PAGE = 200


class ExtractionClient(RecallClient):
    def __init__(self, base_url: str, token: str) -> None:
        # The bundled model takes minutes for a long conversation's extraction run.
        super().__init__(base_url, token, timeout=3600.0)

    def extract(self) -> dict:
        response = self.http.post("/api/facts/extract")
        check_status(response, 200)
        return response.json()

    def extract_all(self) -> dict:
        """Extraction runs until one finds nothing left to process: their counts summed,
        `rejected` None when the service does not report it (before grounded extraction)."""
        total: Counter = Counter()
        rejected: dict[str, int] | None = None
        errors: list[str] = []
        for _ in range(MAX_RUNS):
            result = self.extract()
            total["runs"] += 1
            total.update({k: v for k, v in result.items()
                          if isinstance(v, int) and not isinstance(v, bool)})
            errors += result.get("errors") or []
            if isinstance(result.get("rejected"), dict):
                rejected = rejected or {}
                for reason, count in result["rejected"].items():
                    rejected[reason] = rejected.get(reason, 0) + count
            if not result.get("processed_messages"):
                break
        return {**total, "rejected": rejected, "errors": errors}

    def facts(self) -> list[dict]:
        """Every stored fact, page by page."""
        found: list[dict] = []
        while True:
            response = self.http.get("/api/facts",
                                     params={"limit": FACT_PAGE, "offset": len(found)})
            check_status(response, 200)
            page = response.json()["facts"]
            found += page
            if len(page) < FACT_PAGE:
                return found
