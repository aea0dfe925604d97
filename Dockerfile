# nightshift: one image for the API, the scheduler and workers.
# GPU workers need the NVIDIA container toolkit on the host; NVML is read through the driver it mounts.
FROM python:3.11-slim

ENV PYTHONDONTWRITEBYTECODE=1 PYTHONUNBUFFERED=1 \
    GRADIO_ANALYTICS_ENABLED=False HF_HUB_DISABLE_TELEMETRY=1 \
    NIGHTSHIFT_HOME=/var/lib/nightshift
WORKDIR /opt/nightshift
COPY pyproject.toml README.md ./
COPY scheduler ./scheduler
COPY api ./api
COPY assistant ./assistant
COPY prompts ./prompts
RUN pip install --no-cache-dir '.[postgres]' && useradd --system --home /var/lib/nightshift nightshift \
    && mkdir -p /var/lib/nightshift && chown nightshift /var/lib/nightshift
USER nightshift
EXPOSE 8000
ENTRYPOINT ["nightshift"]
CMD ["up", "--host", "0.0.0.0"]
