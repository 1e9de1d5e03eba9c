# The service's container image: one image for every process (web, worker, ai, bulk, beat, migrate,
# manage ...), chosen by the first argument (deploy/container/entrypoint.sh).
#
#   podman build -t chatwidget .          (or docker build; deploy/compose.yaml builds it too)
#
# BASE_IMAGE: any Debian-like image with Python 3.11, `python3 -m venv` and a shell. Nothing here
# is tied to one architecture: on an arm64 host the same command builds an arm64 image (every
# pinned requirement has arm64 wheels or builds from source in the build stage).
ARG BASE_IMAGE=python:3.11-slim-bookworm

# --- build: the pinned requirements as wheels, then the virtualenv, once ----------------------------------
FROM ${BASE_IMAGE} AS build
ENV PIP_DISABLE_PIP_VERSION_CHECK=1 PIP_NO_CACHE_DIR=1 PIP_PROGRESS_BAR=off
WORKDIR /build
COPY requirements/base.txt requirements/base.txt
# setuptools and wheel first: the few requirements published as source only are built with them
# (an older pip, such as Debian's, builds them in the virtualenv itself).
RUN python3 -m venv /opt/venv \
    && /opt/venv/bin/pip install setuptools==84.2.1 wheel==0.48.0 \
    && /opt/venv/bin/pip wheel --wheel-dir /build/wheels -r requirements/base.txt \
    && /opt/venv/bin/pip install --no-index --find-links /build/wheels -r requirements/base.txt

# --- the image -------------------------------------------------------------------------------------------
FROM ${BASE_IMAGE}
# VAR_DIR holds what the processes write besides the database: the collected static files (made
# below, at build time), the metrics of the host's processes and the embedded default's files.
# Uploaded chat files live under MEDIA_ROOT, a volume of their own (deploy/compose.yaml). A Celery
# worker's container serves its own processes' metrics on METRICS_PORT (its folder is no web's to
# read; docs/operating/metrics.md); the other processes leave the variable unread.
ENV PATH=/opt/venv/bin:$PATH \
    PYTHONUNBUFFERED=1 \
    PYTHONDONTWRITEBYTECODE=1 \
    DJANGO_SETTINGS_MODULE=config.settings \
    VAR_DIR=/app/var \
    MEDIA_ROOT=/data/media \
    WEB_HOST=0.0.0.0 \
    PORT=8000 \
    METRICS_PORT=9464
RUN (getent group chatwidget || groupadd --gid 10001 chatwidget) \
    && useradd --uid 10001 --gid chatwidget --home-dir /app --no-create-home --shell /usr/sbin/nologin chatwidget
COPY --from=build /opt/venv /opt/venv
WORKDIR /app
COPY --chown=root:root . /app
# Static files are collected into the image with placeholder settings: nothing secret is read, and
# the same files are served whatever the deployment's settings.
RUN SECRET_KEY=collectstatic-only python manage.py collectstatic --noinput -v0 \
    && mkdir -p /app/var/metrics /data/media \
    && chown -R chatwidget:chatwidget /app/var /data \
    && chmod 0755 deploy/container/entrypoint.sh
USER chatwidget
EXPOSE 8000 9464
VOLUME ["/data/media"]
# The web process's own check (database, cache and broker answer); other processes' containers
# replace it (deploy/compose.yaml, deploy/kubernetes/).
HEALTHCHECK --interval=15s --timeout=5s --start-period=30s --retries=3 \
    CMD ["python", "deploy/container/healthcheck.py"]
ENTRYPOINT ["deploy/container/entrypoint.sh"]
CMD ["web"]
