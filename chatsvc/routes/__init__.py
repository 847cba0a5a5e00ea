"""HTTP route handlers, one module per area of API.md."""
