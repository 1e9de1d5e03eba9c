"""The part of deploy/kubernetes/ that `podman kube play` runs, for .ci/container.sh: the ConfigMap,
the web Deployment and the default queue's worker Deployment as committed, with CI's values where a
cluster has its own: the image, the Secret's values (podman plays no Secret from a manifest: a
ConfigMap of the same name stands in for it), the uploads' claim as a podman volume, the pod's name
for its address, and one replica each."""

from __future__ import annotations

import argparse
import pathlib

import yaml

KUBE = pathlib.Path(__file__).resolve().parents[1] / "deploy" / "kubernetes"


def main() -> None:
    parser = argparse.ArgumentParser()
    for name in ("--out", "--image", "--database-url", "--redis-url", "--secret-key", "--metrics-token"):
        parser.add_argument(name, required=True)
    args = parser.parse_args()

    config = yaml.safe_load((KUBE / "configmap.yaml").read_text())
    # /healthz answers plain http (exempt from the redirect); nothing else is asked here.
    secrets = yaml.safe_load((KUBE / "secret.example.yaml").read_text())
    values = dict(secrets["stringData"])
    values.update(
        SECRET_KEY=args.secret_key,
        WEBHOOK_SECRET_KEYS="",
        DATABASE_URL=args.database_url,
        REDIS_URL=args.redis_url,
        EMAIL_URL="consolemail://",
        METRICS_TOKEN=args.metrics_token,
    )
    values = {k: v for k, v in values.items() if v}
    name = secrets["metadata"]["name"]
    stand_in = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name}, "data": values}

    claim = yaml.safe_load((KUBE / "media.yaml").read_text())
    deployments = []
    for path, name in (("web.yaml", "chatwidget-web"), ("workers.yaml", "chatwidget-worker")):
        deployment = next(
            doc for doc in yaml.safe_load_all((KUBE / path).read_text()) if doc["metadata"]["name"] == name
        )
        deployment["spec"]["replicas"] = 1
        container = deployment["spec"]["template"]["spec"]["containers"][0]
        container["image"] = args.image
        container["envFrom"] = [
            {"configMapRef": ref["secretRef"]} if "secretRef" in ref else ref for ref in container["envFrom"]
        ]
        # podman fills a field reference from the pod's metadata only: the pod's name stands in for
        # its address (status.podIP), which joins ALLOWED_HOSTS the same way.
        for env in container.get("env", []):
            if env.get("valueFrom", {}).get("fieldRef", {}).get("fieldPath") == "status.podIP":
                env["valueFrom"] = {"fieldRef": {"fieldPath": "metadata.name"}}
        deployments.append(deployment)
    pathlib.Path(args.out).write_text(yaml.safe_dump_all([config, stand_in, claim, *deployments], sort_keys=False))


if __name__ == "__main__":
    main()
