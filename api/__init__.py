"""nightshift's HTTP API (FastAPI) and its command-line client."""
