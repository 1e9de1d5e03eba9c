"""The self-hosting packages (Dockerfile, deploy/compose.yaml, deploy/kubernetes/, deploy/grafana/)
read as their tools read them: every process of the Procfile has its service and its Deployment, the
stateful images are pinned to a major version, nothing runs as root, exactly one beat, the app
starts after the migrations, and the dashboard asks only for metrics the service exports. The image
itself is built and run by CI (.ci/container.sh)."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[1]
DEPLOY = ROOT / "deploy"
PROCESSES = {"web", "worker", "ai", "bulk", "beat"}


def procfile_processes() -> set[str]:
    return {line.split(":", 1)[0] for line in (ROOT / "Procfile").read_text().splitlines() if ":" in line}


def compose() -> dict:
    return yaml.safe_load((DEPLOY / "compose.yaml").read_text())


def manifests() -> list[dict]:
    docs = []
    for path in sorted((DEPLOY / "kubernetes").glob("*.yaml")):
        docs.extend(doc for doc in yaml.safe_load_all(path.read_text()) if doc)
    return docs


def test_the_procfile_is_what_the_packages_run():
    assert procfile_processes() == PROCESSES


def test_the_dockerfile_builds_on_a_chosen_base_as_a_user_with_a_health_check():
    text = (ROOT / "Dockerfile").read_text()
    assert "ARG BASE_IMAGE=python:3.11-slim-bookworm" in text
    assert text.count("FROM ${BASE_IMAGE}") == 2  # the build stage and the image
    users = re.findall(r"(?m)^USER (\S+)$", text)
    assert users and users[-1] not in {"root", "0"}
    assert re.search(r"(?m)^HEALTHCHECK .*\n.*healthcheck\.py", text)
    assert 'ENTRYPOINT ["deploy/container/entrypoint.sh"]' in text
    assert "collectstatic" in text
    assert not re.search(r"amd64|x86_64|aarch64|arm64v8", text.split("ARG BASE_IMAGE")[1])


def test_compose_runs_every_process_after_the_migrations():
    services = compose()["services"]
    assert set(services) == PROCESSES | {"postgres", "redis", "migrate", "nginx"}
    assert services["migrate"]["command"] == ["migrate"]
    assert services["migrate"]["depends_on"]["postgres"]["condition"] == "service_healthy"
    assert services["migrate"]["depends_on"]["redis"]["condition"] == "service_healthy"
    for name in PROCESSES:
        service = services[name]
        assert service["command"] == [name]
        assert service["depends_on"] == {"migrate": {"condition": "service_completed_successfully"}}
        assert service["restart"] == "unless-stopped"
        assert "media:/data/media" in service["volumes"]
        assert service["environment"]["REDIS_URL"] == "redis://redis:6379/0"
        assert service["environment"]["DATABASE_URL"].endswith("@postgres:5432/chatwidget")
    assert services["nginx"]["depends_on"] == {"web": {"condition": "service_healthy"}}
    assert set(compose()["volumes"]) == {"pgdata", "redisdata", "media"}


def test_compose_pins_the_stateful_services_to_a_major_version_and_takes_every_image_from_a_variable():
    services = compose()["services"]
    assert services["postgres"]["image"] == "${POSTGRES_IMAGE:-docker.io/library/postgres:16-bookworm}"
    assert services["redis"]["image"] == "${REDIS_IMAGE:-docker.io/library/redis:7-bookworm}"
    assert services["nginx"]["image"].startswith("${NGINX_IMAGE:-docker.io/library/nginx:1.")
    for name in PROCESSES | {"migrate"}:
        assert services[name]["image"] == "${APP_IMAGE:-chatwidget:latest}"


def test_every_worker_service_has_its_own_health_check_and_beat_none():
    services = compose()["services"]
    for name, node in (("worker", "celery"), ("ai", "ai"), ("bulk", "bulk")):
        assert f"--destination {node}@$$(hostname)" in services[name]["healthcheck"]["test"][1]
    assert services["beat"]["healthcheck"] == {"disable": True}
    assert services["web"]["healthcheck"]["test"] == ["CMD", "python", "deploy/container/healthcheck.py"]


def test_the_env_example_names_every_required_secret():
    text = (DEPLOY / ".env.example").read_text()
    for name in ("SECRET_KEY=", "WEBHOOK_SECRET_KEYS=", "POSTGRES_PASSWORD=", "ALLOWED_HOSTS=", "APP_MODE=production"):
        assert re.search(rf"(?m)^{re.escape(name)}", text), name


def test_the_compose_nginx_keeps_the_proxy_contract_of_the_host_config():
    host = (DEPLOY / "nginx" / "chatwidget.conf").read_text()
    for name in ("compose.conf", "compose-tls.conf"):
        text = (DEPLOY / "nginx" / name).read_text()
        assert "server web:8000;" in text
        for line in (
            "client_max_body_size 11m;",
            "proxy_set_header Upgrade $http_upgrade;",
            "proxy_set_header X-Forwarded-For $proxy_add_x_forwarded_for;",
            "proxy_set_header X-Forwarded-Proto $scheme;",
            "proxy_read_timeout 1h;",
        ):
            assert line in text and line in host, (name, line)


def _kind(kind: str) -> dict[str, dict]:
    return {doc["metadata"]["name"]: doc for doc in manifests() if doc["kind"] == kind}


def test_kubernetes_has_a_deployment_per_process_and_exactly_one_beat():
    deployments = _kind("Deployment")
    assert set(deployments) == {f"chatwidget-{name}" for name in PROCESSES}
    for name in PROCESSES:
        container = deployments[f"chatwidget-{name}"]["spec"]["template"]["spec"]["containers"][0]
        assert container["args"] == [name]
    beat = deployments["chatwidget-beat"]["spec"]
    assert beat["replicas"] == 1 and beat["strategy"] == {"type": "Recreate"}
    job = _kind("Job")["chatwidget-migrate"]["spec"]["template"]["spec"]
    assert job["containers"][0]["args"] == ["migrate"] and job["restartPolicy"] == "Never"


def test_kubernetes_pods_run_as_a_user_and_the_web_is_probed():
    for doc in manifests():
        if doc["kind"] in {"Deployment", "Job"}:
            context = doc["spec"]["template"]["spec"]["securityContext"]
            assert context["runAsNonRoot"] is True and context["runAsUser"] != 0, doc["metadata"]["name"]
    web = _kind("Deployment")["chatwidget-web"]["spec"]["template"]["spec"]["containers"][0]
    assert web["readinessProbe"]["httpGet"]["path"] == "/healthz"
    host = web["readinessProbe"]["httpGet"]["httpHeaders"][0]["value"]
    assert host in _kind("ConfigMap")["chatwidget-config"]["data"]["ALLOWED_HOSTS"].split(",")
    assert "tcpSocket" in web["livenessProbe"]
    service = _kind("Service")["chatwidget-web"]["spec"]
    assert service["selector"] == _kind("Deployment")["chatwidget-web"]["spec"]["selector"]["matchLabels"]


def test_the_ingress_keeps_websockets_open_and_the_body_limit():
    annotations = _kind("Ingress")["chatwidget"]["metadata"]["annotations"]
    assert annotations["nginx.ingress.kubernetes.io/proxy-read-timeout"] == "3600"
    assert annotations["nginx.ingress.kubernetes.io/proxy-send-timeout"] == "3600"
    assert annotations["nginx.ingress.kubernetes.io/proxy-body-size"] == "11m"


def test_the_kustomization_lists_every_manifest_but_the_secret_and_the_job():
    listed = set(yaml.safe_load((DEPLOY / "kubernetes" / "kustomization.yaml").read_text())["resources"])
    present = {p.name for p in (DEPLOY / "kubernetes").glob("*.yaml")} - {"kustomization.yaml"}
    assert listed == present - {"secret.example.yaml", "migrate-job.yaml"}


def _exported_metrics() -> set[str]:
    table = (ROOT / "docs" / "operating" / "metrics.md").read_text()
    return set(re.findall(r"^\| `(chatwidget_[a-z_]+)` \|", table, flags=re.M))


def test_the_dashboard_asks_only_for_exported_metrics_and_shows_each_of_them():
    dashboard = json.loads((DEPLOY / "grafana" / "chatwidget.json").read_text())
    exprs = [target["expr"] for panel in dashboard["panels"] for target in panel["targets"]]
    used = {
        re.sub(r"_(bucket|count|sum)$", "", name) for expr in exprs for name in re.findall(r"chatwidget_[a-z_]+", expr)
    }
    exported = _exported_metrics()
    assert exported and used == exported
    assert len({panel["id"] for panel in dashboard["panels"]}) == len(dashboard["panels"])


def test_the_entrypoint_refuses_an_unknown_process_and_runs_a_management_command():
    entrypoint = str(DEPLOY / "container" / "entrypoint.sh")
    refused = subprocess.run(["sh", entrypoint, "serve"], capture_output=True, text=True, timeout=30)
    assert refused.returncode == 2 and "unknown process 'serve'" in refused.stderr
    env = {"PATH": f"{Path(sys.executable).parent}:/usr/bin:/bin", "VAR_DIR": str(ROOT / "var")}
    ran = subprocess.run(
        ["sh", entrypoint, "manage", "help", "create_widget"], capture_output=True, text=True, timeout=120, env=env
    )
    assert ran.returncode == 0, ran.stderr
    assert "--owner-email" in ran.stdout


WORKERS = PROCESSES - {"web", "beat"}


def _image_metrics_port() -> str:
    found = re.search(r"(?m)^\s+METRICS_PORT=(\d+)\s*$", (ROOT / "Dockerfile").read_text())
    assert found, "the image sets METRICS_PORT"
    return found.group(1)


def test_every_worker_container_serves_its_metrics_on_the_compose_network_only():
    port = _image_metrics_port()
    assert re.search(rf"(?m)^EXPOSE .*\b{port}\b", (ROOT / "Dockerfile").read_text())
    services = compose()["services"]
    for name in WORKERS:
        assert services[name]["expose"] == [port], name
        assert "ports" not in services[name], name  # never published on the host
        assert services[name]["env_file"] == ".env"  # METRICS_TOKEN
    for name in ("web", "beat"):
        assert "expose" not in services[name]
    assert re.search(r"(?m)^METRICS_TOKEN=", (DEPLOY / ".env.example").read_text())


def test_every_worker_pod_declares_its_metrics_port_for_the_scrape_and_beat_none():
    port = _image_metrics_port()
    deployments = _kind("Deployment")
    for name in WORKERS:
        template = deployments[f"chatwidget-{name}"]["spec"]["template"]
        container = template["spec"]["containers"][0]
        assert {"name": "metrics", "containerPort": int(port)} in container["ports"], name
        assert template["metadata"]["annotations"] == {
            "prometheus.io/scrape": "true",
            "prometheus.io/port": port,
            "prometheus.io/path": "/metrics",
        }, name
        assert {"secretRef": {"name": "chatwidget-secrets"}} in container["envFrom"], name
    assert "METRICS_TOKEN" in _kind("Secret")["chatwidget-secrets"]["stringData"]
    beat = deployments["chatwidget-beat"]["spec"]["template"]
    assert "annotations" not in beat["metadata"] and "ports" not in beat["spec"]["containers"][0]


AGGREGATED = re.compile(r"^(topk\(\d+, )?(histogram_quantile\([0-9.]+, )?(sum|max|min)( by \(([a-z_, ]+)\))? ?\(")


def test_the_dashboard_and_the_alerts_aggregate_over_every_target_web_and_workers_alike():
    """Web and worker containers each report their own series of the same names (told apart by
    `instance` and `job`): every query aggregates them, and none keeps those labels apart."""
    dashboard = json.loads((DEPLOY / "grafana" / "chatwidget.json").read_text())
    exprs = [target["expr"] for panel in dashboard["panels"] for target in panel["targets"]]
    rules = yaml.safe_load((DEPLOY / "prometheus" / "alerts.yml").read_text())
    exprs += [rule["expr"] for group in rules["groups"] for rule in group["rules"]]
    for expr in exprs:
        for part in re.split(r"\s/\s", expr.strip()):
            found = AGGREGATED.match(part.strip())
            assert found, expr
            assert not {"instance", "job"} & set(re.split(r",\s*", found.group(5) or "")), expr


def test_web_pods_are_scraped_at_their_address_which_joins_the_allowed_hosts():
    template = _kind("Deployment")["chatwidget-web"]["spec"]["template"]
    assert template["metadata"]["annotations"] == {
        "prometheus.io/scrape": "true",
        "prometheus.io/port": "8000",
        "prometheus.io/path": "/metrics",
    }
    container = template["spec"]["containers"][0]
    assert {"name": "POD_IP", "valueFrom": {"fieldRef": {"fieldPath": "status.podIP"}}} in container["env"]
    env = {
        "PATH": f"{Path(sys.executable).parent}:/usr/bin:/bin",
        "VAR_DIR": str(ROOT / "var"),
        "ALLOWED_HOSTS": "chat.example.com",
        "POD_IP": "10.42.0.7",
    }
    shell = "from django.conf import settings; print(settings.ALLOWED_HOSTS)"
    ran = subprocess.run(
        ["sh", str(DEPLOY / "container" / "entrypoint.sh"), "manage", "shell", "-c", shell],
        capture_output=True,
        text=True,
        timeout=120,
        env=env,
    )
    assert ran.returncode == 0, ran.stderr
    assert ran.stdout.strip().splitlines()[-1] == "['chat.example.com', '10.42.0.7']"
